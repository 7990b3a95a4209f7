import type { ScriptStep } from "./scripted-llm-server.js";

/**
 * Scripted answers for a whole users run on one scripted OpenAI-compatible server, told apart by the
 * request's model (`user`, `judge`, `agent`) and structured-output schema name: the simulated user (plan,
 * a round of its own tools, then messages, then a stop), the planner agent on tau2-retail, an
 * openai-compatible agent, and every judge. Used by the end-to-end test, the CLI examples and the bench.
 */
export function scriptedUsersResponder(options: { agentReply?: string; flagHelpfulness?: boolean } = {}) {
  return (body: any): ScriptStep => {
    const model = String(body?.model ?? "");
    const schema = body?.response_format?.json_schema?.name as string | undefined;
    const messages: any[] = body?.messages ?? [];
    const last = messages.at(-1);
    if (schema === "user_turn_plan")
      return json({ known: ["my order number"], needed: ["the return"], nextStep: "ask for the return" });
    if (model === "user" && schema === "route_decision") return route(messages);
    if (model === "user" && schema === "ui_action") return uiAction(messages);
    if (model === "user" && body?.tool_choice === "required") return userTool(body);
    if (model === "user") return userAct(body, messages, last);
    if (model === "agent") return plannerAgent(last, options.agentReply);
    if (model === "my-agent") return chatAgent(last);
    return judge(schema, messages, options.flagHelpfulness ?? true);
  };
}

function json(value: unknown): ScriptStep {
  return { reply: { content: JSON.stringify(value) } };
}

function userAct(body: any, messages: any[], last: any): ScriptStep {
  const tools = new Set<string>((body?.tools ?? []).map((tool: any) => tool.function?.name));
  const sent = messages.filter((m) => m.role === "assistant" && !m.tool_calls?.length).length;
  if (last?.role === "tool" || (sent === 0 && tools.size === 0))
    return {
      reply: {
        content:
          "Hi, I want to return the headphones from order #W2378156. My email is yusuf.rossi7301@example.com.",
      },
    };
  if (sent === 0) {
    const calls: Array<{ name: string; arguments: unknown }> = [];
    if (tools.has("search_knowledge"))
      calls.push({ name: "search_knowledge", arguments: { query: "return policy refund" } });
    if (tools.has("check_order_status"))
      calls.push({ name: "check_order_status", arguments: { order_id: "#W2378156" } });
    return { reply: { toolCalls: calls } };
  }
  return { reply: { content: "Great, that is all I needed, thank you. ###STOP###" } };
}

/** The prompt of a browser step: the page, the plan and the user's last actions. */
function stepText(messages: any[]): string {
  return String(messages.at(-1)?.content ?? "");
}

/** Hybrid routing: look the order up with a tool first, then act on the page. */
function route(messages: any[]): ScriptStep {
  const usedTool = /^- tool /m.test(stepText(messages));
  return json({
    channel: usedTool ? "ui" : "api",
    reason: usedTool ? "talk to the agent" : "check my notes first",
  });
}

function userTool(body: any): ScriptStep {
  const names = new Set<string>((body?.tools ?? []).map((tool: any) => tool.function?.name));
  const call = names.has("check_order_status")
    ? { name: "check_order_status", arguments: { order_id: "#W2378156" } }
    : { name: "search_knowledge", arguments: { query: "order" } };
  return { reply: { toolCalls: [call] } };
}

const NO_FIELDS = {
  target: null,
  text: null,
  enter: null,
  value: null,
  key: null,
  direction: null,
  url: null,
  index: null,
};

/**
 * UI steps on the demo shop: type the request into the chat widget's input (found by its id in the page
 * description), and once the agent has answered, thank it and stop.
 */
function uiAction(messages: any[]): ScriptStep {
  const text = stepText(messages);
  const input = /\[([^\]]+)\] input\b[^\n]*"(?:[^"]*message[^"]*)"/i.exec(text)?.[1];
  const typed = /^- page type /m.test(text);
  if (!input) return json({ ...NO_FIELDS, type: "terminate" });
  const message = typed
    ? "Thanks, that is all I needed. ###STOP###"
    : "Hi, I want to return the headphones from order #W2378156. My email is yusuf.rossi7301@example.com.";
  return json({ ...NO_FIELDS, type: "type", target: input, text: message, enter: true });
}

function plannerAgent(last: any, reply?: string): ScriptStep {
  if (last?.role === "tool")
    return { reply: { content: reply ?? "I found your account. Which item would you like to return?" } };
  return {
    reply: {
      toolCalls: [{ name: "find_user_id_by_email", arguments: { email: "yusuf.rossi7301@example.com" } }],
    },
  };
}

function chatAgent(last: any): ScriptStep {
  if (last?.role === "tool")
    return { reply: { content: "Your order #W2378156 was delivered; I can start the return." } };
  return { reply: { toolCalls: [{ name: "get_order_details", arguments: { order_id: "#W2378156" } }] } };
}

function judge(schema: string | undefined, messages: any[], flagHelpfulness: boolean): ScriptStep {
  if (schema?.startsWith("realism_")) return json({ consistent: true, reason: "in character" });
  // The agent's tools get Gecko's semantic validation when a model serves roles.default.
  if (schema === "semantic_verdict") return json({ valid: true, problems: [] });
  if (schema === "response_scores") {
    const score = (n: number) => ({
      score: n,
      justification: n < 3 ? "did not move the return forward" : "fine",
    });
    return json({
      helpfulness: score(flagHelpfulness ? 1 : 4),
      coherence: score(4),
      verbosity: score(3),
      relevance: score(4),
      faithfulness: score(4),
    });
  }
  const data = dataOf(messages);
  if (schema === "checklist") return json({ items: [{ description: "The agent found the user's order." }] });
  if (schema === "judgement") {
    const items = (data?.checklist ?? [{}]).map((item: any) => ({
      description: item.description ?? "item",
      status: "success",
      reasoning: "the transcript shows it",
    }));
    return json({ items });
  }
  if (schema === "unique_failures" || schema === "merged_failures") {
    return json({
      failures: [
        {
          type: "lack_of_specific_information",
          title: "Stalls instead of starting the return",
          description: "The agent asks again rather than acting on what the user gave.",
          severity: "medium",
          items: [0],
        },
      ],
    });
  }
  return { status: 500, error: { message: `no scripted answer for schema ${schema}` } };
}

/** The JSON between <data> and </data> in the last user message, if any. */
function dataOf(messages: any[]): any {
  const text = String([...messages].reverse().find((m) => m.role === "user")?.content ?? "");
  const start = text.indexOf("<data>");
  const end = text.lastIndexOf("</data>");
  if (start < 0 || end < 0) return undefined;
  try {
    return JSON.parse(text.slice(start + 6, end));
  } catch {
    return undefined;
  }
}
