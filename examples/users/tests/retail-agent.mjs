// A tiny rule-based retail support agent for `terrarium users test`, acting on tau2-retail through the
// tools handle terrarium passes in its input: with `--agent-tools tau2-retail`, every test gets a fresh
// session of the store, and `tools.call(name, args)` runs a call on it (recorded as the agent's tool call,
// so expect_tool_call and expect_state see it). It needs no model.

const ORDER = /#W\d{7}/;

export async function reply({ message, history, tools }) {
  const said = [...history.filter((m) => m.role === "user").map((m) => m.content), message].join(" ");
  const orderId = message.match(ORDER)?.[0] ?? said.match(ORDER)?.[0];
  if (!orderId) return "Hello! Which order is this about? Please give its number (like #W1234567).";

  const details = await tools.call("get_order_details", { order_id: orderId });
  if (details.status !== "ok") return `I could not find order ${orderId}.`;
  const order = details.observation;

  if (/\bcancel/i.test(message)) {
    const reason = /mistake|wrong|accident/i.test(message) ? "ordered by mistake" : "no longer needed";
    const cancelled = await tools.call("cancel_pending_order", { order_id: orderId, reason });
    if (cancelled.status !== "ok")
      return `Order ${orderId} is ${order.status}; only pending orders can be cancelled.`;
    return `Order ${orderId} is cancelled (${reason}); the payment will be refunded.`;
  }
  const items = order.items.map((item) => item.name).join(", ");
  return `Order ${orderId} is ${order.status}: ${items}.`;
}
