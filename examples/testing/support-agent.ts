/**
 * A small rule-based support agent for tau2-retail, written as an in-process agent function: it reads the
 * order number from the customer's message and acts through `tools`, the handle terrarium passes in (each
 * call runs on the test's own copy of the store and is recorded for `expect_tool_call`).
 */
import type { AgentFunction } from "terrarium/testing";

const ORDER_ID = /#W\d{7}/;

export const supportAgent: AgentFunction = async ({ message, tools }) => {
  const order = message.match(ORDER_ID)?.[0];
  if (!order) return "Which order is it about? Please give me its number (it looks like #W1234567).";
  if (/\bcancel/i.test(message)) {
    const reason = /mistake/i.test(message) ? "ordered by mistake" : "no longer needed";
    const outcome = await tools.call("cancel_pending_order", { order_id: order, reason });
    if (outcome.status === "ok") return `Order ${order} is cancelled; the refund goes back to how you paid.`;
    const why = (outcome.observation as { error?: string } | null)?.error ?? outcome.status;
    return `Sorry, I could not cancel order ${order}: ${why}.`;
  }
  const details = await tools.call("get_order_details", { order_id: order });
  if (details.status !== "ok") return `I could not find order ${order}.`;
  const status = (details.observation as { status?: string }).status;
  return `Order ${order} is ${status}.`;
};
