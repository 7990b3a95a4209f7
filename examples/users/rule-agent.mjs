// A tiny rule-based support agent for `users run --agent module:examples/users/rule-agent.mjs#reply`.
// It needs no model: it is here to try user simulation offline and as a template for wrapping your own
// agent in-process. Each call gets the user's message, the conversation so far, the session id, the run
// id and the scenario; it answers the reply text, or {message, toolCalls, usage}.

const ORDER = /#?W\d{7}/;
const EMAIL = /[\w.+-]+@[\w-]+\.[\w.]+/;

export function reply({ message, history }) {
  const said = [message, ...history.filter((m) => m.role === "user").map((m) => m.content)].join(" ");
  const order = said.match(ORDER)?.[0];
  const email = said.match(EMAIL)?.[0];
  const toolCalls = [];
  if (email) toolCalls.push({ tool: "find_user_id_by_email", arguments: { email }, status: "ok", result: "user_1" });
  if (order) toolCalls.push({ tool: "get_order_details", arguments: { order_id: order }, status: "ok", result: {} });
  if (!email) return { message: "I can help with that. First, what is the email address on your account?", toolCalls };
  if (!order) return { message: "Thanks, you are verified. Which order is this about?", toolCalls };
  if (/\b(yes|confirm|go ahead|please do)\b/i.test(message))
    return { message: `Done: the request for order ${order} is submitted.`, toolCalls };
  return { message: `I found order ${order}. Shall I go ahead with your request? Please confirm.`, toolCalls };
}
