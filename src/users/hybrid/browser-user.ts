import type { CallResult, Models } from "../../models/hub.js";
import type { Message, ToolSpec } from "../../models/types.js";
import type { ActionResult, ChatLocator, Observation, UiAction } from "../browser/types.js";
import type { AgentToolCallRecord, EndReason, TokenCount, TurnRecord, UserAction } from "../conversation.js";
import type { Scenario } from "../scenario/index.js";
import { seedNumber } from "../simulator/user.js";
import type { UserToolbox } from "../tools/index.js";
import {
  formatUserTurnPlan,
  parseUserTurn,
  USER_TURN_PLAN_SCHEMA,
  type UserTurnPlan,
} from "../turns/index.js";
import { API_ASK, browserSystemPrompt, PLAN_ASK, ROUTE_ASK, stepPrompt, UI_ASK } from "./prompts.js";
import {
  ROUTE_SCHEMA,
  type RouteDecision,
  toUiAction,
  UI_ACTION_SCHEMA,
  type UiActionAnswer,
} from "./schemas.js";

/** What the browser user needs of a page session (`BrowserSession` of `src/users/browser` fits). */
export interface PageSession {
  observe(): Promise<Observation>;
  act(action: UiAction): Promise<ActionResult>;
  readChat(
    locator?: ChatLocator,
  ): Promise<{ messages: Array<{ role: "user" | "agent"; content: string }>; sessionId?: string }>;
}

export type BrowserMode = "hybrid" | "ui-only";

export interface BrowserConversationOptions {
  models: Models;
  scenario: Scenario;
  page: PageSession;
  mode: BrowserMode;
  /** The user's own tools (used in hybrid mode only). */
  toolbox: UserToolbox;
  seed: string;
  /** The user's model (plan, actions, tools); the router's defaults to it. */
  model: string;
  routerModel?: string;
  temperature?: number;
  /** Most steps (observe → route → act) in one run (default 8 per turn of `max_turns`). */
  maxSteps?: number;
  chat?: ChatLocator;
  /** The agent's tool calls in its session so far (from the terrarium server behind the page), if known. */
  agentCalls?: (sessionId: string) => Promise<AgentToolCallRecord[]>;
  scope?: string;
  onStep?: (step: BrowserStep) => void;
}

/** One step of the browser user: what it chose and what came of it. */
export interface BrowserStep {
  step: number;
  channel: "ui" | "api";
  action: UserAction;
  reason?: string;
  timing: { observeMs: number; modelMs: number; actMs: number };
}

export interface BrowserConversationResult {
  turns: TurnRecord[];
  endReason: EndReason;
  error?: string;
  steps: BrowserStep[];
  /** The conversation as the chat widget shows it at the end (VISTA reads it from the page). */
  transcript: Array<{ role: "user" | "agent"; content: string }>;
  sessionId?: string;
}

/** The same action this many times in a row gets a note telling the user to do something else… */
const REPEAT_LIMIT = 3;
/** …and this many times ends the run with `repetition`. */
const REPEAT_END = 6;

/**
 * The UI-only or hybrid user (VISTA): each step it observes the page, keeps its plan up to date (when the
 * agent said something new), lets the router choose between the page and its own tools (hybrid only),
 * and takes one action. A turn ends when a new user message appears in the chat widget; the
 * conversation is read from the widget at the end. Stops: `terminate`, a stop token in a typed message
 * (the text before it is still sent), the turn budget once the agent answered, or the step budget.
 */
export async function simulateBrowserConversation(
  options: BrowserConversationOptions,
): Promise<BrowserConversationResult> {
  const { models, scenario, page, mode } = options;
  const tools: ToolSpec[] =
    mode === "hybrid"
      ? options.toolbox.specs().map((spec) => ({
          name: spec.name,
          description: spec.description,
          inputSchema: spec.parameters as ToolSpec["inputSchema"],
        }))
      : [];
  const system = browserSystemPrompt(scenario, {
    mode,
    hasRetrieval: scenario.userTools.some((tool) => tool.kind === "retrieval"),
    toolNames: tools.map((tool) => tool.name),
  });
  const maxSteps = options.maxSteps ?? scenario.maxTurns * 8;
  const seed = seedNumber(options.seed);
  const steps: BrowserStep[] = [];
  const recent: string[] = [];
  const pending: UserAction[] = [];
  const usage = { inputTokens: 0, outputTokens: 0, calls: 0 };
  let plan: UserTurnPlan | undefined;
  let agentSeen = -1;
  let turns: TurnRecord[] = [];
  let userMessages = 0;
  let endReason: EndReason | undefined;
  let error: string | undefined;
  let notes: string[] = [];
  // The agent's tool calls, placed on the turn that was current when they were first seen.
  const callsByTurn: AgentToolCallRecord[][] = [];
  let callsSeen = 0;
  const collectCalls = async (sessionId: string | undefined, userMessagesNow: number) => {
    if (!sessionId || !options.agentCalls) return;
    const calls = await options.agentCalls(sessionId);
    const fresh = calls.slice(callsSeen);
    callsSeen = calls.length;
    const at = Math.max(0, userMessagesNow - 1);
    callsByTurn[at] = [...(callsByTurn[at] ?? []), ...fresh];
  };
  const account = (result: CallResult) => {
    usage.inputTokens += result.usage.inputTokens;
    usage.outputTokens += result.usage.outputTokens;
    usage.calls += 1;
    return result.latencyMs;
  };
  const call = (model: string, tag: string) => ({
    model,
    temperature: options.temperature ?? 0.7,
    seed,
    variant: `${options.seed}#${tag}`,
    ...(options.scope ? { scope: options.scope } : {}),
  });
  const turnOf = (stepNumber: number) => `step${stepNumber}`;

  try {
    for (let step = 1; step <= maxSteps && !endReason; step++) {
      const observed = performance.now();
      const observation = await page.observe();
      const chat = await page.readChat(options.chat);
      const observeMs = performance.now() - observed;
      const agentCount = chat.messages.filter((m) => m.role === "agent").length;
      const userCount = chat.messages.filter((m) => m.role === "user").length;
      if (userCount > userMessages) {
        // The user's message reached the widget: the actions since the last one belong to this turn.
        userMessages = userCount;
        turns.push(openTurn(userCount, plan, pending.splice(0), usage));
      }
      if (userMessages >= scenario.maxTurns && lastIsAgent(chat.messages)) {
        endReason = "max_turns";
        break;
      }
      let modelMs = 0;
      // This step's notes (a failed or repeated action) go into every prompt of the step, then are spent.
      const stepNotes = notes;
      notes = [];
      const base: Message[] = [{ role: "system", content: system }];
      const view = (ask: string) =>
        stepPrompt({
          observation: observation.text,
          plan: plan ? formatUserTurnPlan(plan) : "(none yet)",
          recent: recent.slice(-6),
          notes: stepNotes,
          ask,
        });
      if (!plan || agentCount !== agentSeen) {
        agentSeen = agentCount;
        await collectCalls(chat.sessionId, userCount);
        const planned = await models.generateObject<UserTurnPlan>({
          ...call(options.model, `${turnOf(step)}/plan`),
          messages: [...base, { role: "user", content: view(PLAN_ASK) }],
          schema: USER_TURN_PLAN_SCHEMA,
          schemaName: "user_turn_plan",
        });
        modelMs += account(planned);
        plan = planned.object;
      }
      let channel: "ui" | "api" = "ui";
      let reason: string | undefined;
      if (tools.length > 0) {
        const routed = await models.generateObject<RouteDecision>({
          ...call(options.routerModel ?? options.model, `${turnOf(step)}/route`),
          messages: [...base, { role: "user", content: view(ROUTE_ASK) }],
          schema: ROUTE_SCHEMA,
          schemaName: "route_decision",
        });
        modelMs += account(routed);
        channel = routed.object.channel;
        reason = routed.object.reason;
      }
      const acted = performance.now();
      let action: UserAction;
      if (channel === "api") {
        const answer = await models.generateWithTools({
          ...call(options.model, `${turnOf(step)}/api`),
          messages: [...base, { role: "user", content: view(API_ASK) }],
          tools,
          toolChoice: "required",
        });
        modelMs += account(answer);
        const first = answer.toolCalls[0];
        if (!first) {
          action = {
            kind: "tool",
            tool: "(none)",
            arguments: {},
            status: "error",
            message: "no tool was called",
            data: null,
          };
        } else {
          const result = await options.toolbox.call(first.name, first.arguments);
          action = { kind: "tool", tool: first.name, arguments: first.arguments, ...result };
        }
      } else {
        const answer = await models.generateObject<UiActionAnswer>({
          ...call(options.model, `${turnOf(step)}/ui`),
          messages: [...base, { role: "user", content: view(UI_ASK) }],
          schema: UI_ACTION_SCHEMA,
          schemaName: "ui_action",
        });
        modelMs += account(answer);
        const checked = toUiAction(answer.object);
        if ("error" in checked) {
          action = uiAction(answer.object as never, { ok: false, error: checked.error }, observation);
          notes.push(`Your last action was not valid: ${checked.error}.`);
        } else {
          const outcome = await takeUiAction(page, checked.action);
          if (outcome.stop) endReason = outcome.stop;
          action = uiAction(checked.action, outcome.result, observation);
        }
      }
      pending.push(action);
      const line = describeAction(action);
      recent.push(line);
      if (recent.length >= REPEAT_END && recent.slice(-REPEAT_END).every((r) => r === line)) {
        endReason ??= "repetition";
      } else if (recent.length >= REPEAT_LIMIT && recent.slice(-REPEAT_LIMIT).every((r) => r === line)) {
        notes.push(
          `You did the same thing ${REPEAT_LIMIT} times in a row (${line}). Do something else, or end the conversation.`,
        );
      }
      const record: BrowserStep = {
        step,
        channel,
        action,
        ...(reason ? { reason } : {}),
        timing: { observeMs: ms(observeMs), modelMs: ms(modelMs), actMs: ms(performance.now() - acted) },
      };
      steps.push(record);
      options.onStep?.(record);
    }
    endReason ??= "max_turns";
  } catch (failure) {
    endReason = "user_error";
    error = `the browser user failed: ${failure instanceof Error ? failure.message : String(failure)}`;
  }

  // VISTA reads the conversation from the widget at the end.
  const final = await page.readChat(options.chat).catch(() => ({
    messages: [] as Array<{ role: "user" | "agent"; content: string }>,
    sessionId: undefined,
  }));
  await collectCalls(final.sessionId, final.messages.filter((m) => m.role === "user").length).catch(
    () => undefined,
  );
  turns = assembleTurns(final.messages, turns, pending, usage, callsByTurn);
  const last = turns.at(-1);
  if (last && (endReason === "stop" || endReason === "transfer" || endReason === "out_of_scope"))
    last.stop = endReason;
  return {
    turns,
    endReason,
    ...(error ? { error } : {}),
    steps,
    transcript: final.messages,
    ...(final.sessionId ? { sessionId: final.sessionId } : {}),
  };
}

/** A UI action, with the stop contract applied to typed text: the text before a stop token is still sent. */
async function takeUiAction(
  page: PageSession,
  action: UiAction,
): Promise<{ result: ActionResult; stop?: EndReason }> {
  if (action.type === "terminate") return { result: await page.act(action), stop: "stop" };
  if (action.type === "type") {
    const parsed = parseUserTurn(action.text);
    if (parsed.stop) {
      const result =
        parsed.message === ""
          ? { ok: true, actionMs: 0, settleMs: 0 }
          : await page.act({ ...action, text: parsed.message, enter: true });
      return { result, stop: parsed.stop };
    }
  }
  return { result: await page.act(action) };
}

function uiAction(
  action: UiAction,
  result: Pick<ActionResult, "ok" | "error">,
  observation: Observation,
): UserAction {
  return {
    kind: "ui",
    tool: action.type,
    arguments: action,
    status: result.ok ? "ok" : "error",
    message: result.ok ? "done" : (result.error ?? "failed"),
    data: null,
    ...(observation.screenshot ? { screenshot: observation.screenshot } : {}),
  };
}

function describeAction(action: UserAction): string {
  const args = JSON.stringify(action.arguments);
  return `${action.kind === "ui" ? "page" : "tool"} ${action.tool} ${args.length > 160 ? `${args.slice(0, 160)}…` : args} → ${action.status}${action.status === "ok" ? "" : `: ${action.message}`}`;
}

function lastIsAgent(messages: ReadonlyArray<{ role: string }>): boolean {
  return messages.at(-1)?.role === "agent";
}

/** A turn opened when its user message appeared; its text and the agent's reply are filled in at the end. */
function openTurn(
  turn: number,
  plan: UserTurnPlan | undefined,
  actions: UserAction[],
  usage: TokenCount & { calls: number },
): TurnRecord {
  const record: TurnRecord = {
    turn,
    actions,
    user: "",
    userUsage: { ...usage },
    timing: { userModelMs: 0, toolsMs: 0, agentMs: 0 },
    ...(plan ? { plan } : {}),
  };
  usage.inputTokens = 0;
  usage.outputTokens = 0;
  usage.calls = 0;
  return record;
}

/**
 * The turns from the widget's final transcript: user message i with the agent's messages after it, the
 * actions and usage recorded when it appeared. Actions after the last message (e.g. `terminate`) join the
 * last turn. The agent's tool calls go to the turn that was current when they were seen.
 */
function assembleTurns(
  messages: ReadonlyArray<{ role: "user" | "agent"; content: string }>,
  opened: TurnRecord[],
  trailing: UserAction[],
  usage: TokenCount & { calls: number },
  callsByTurn: ReadonlyArray<AgentToolCallRecord[] | undefined>,
): TurnRecord[] {
  const turns: TurnRecord[] = [];
  let index = -1;
  for (const message of messages) {
    if (message.role === "user") {
      index += 1;
      const base = opened[index] ?? {
        turn: index + 1,
        actions: [],
        user: "",
        userUsage: { inputTokens: 0, outputTokens: 0, calls: 0 },
        timing: { userModelMs: 0, toolsMs: 0, agentMs: 0 },
      };
      turns.push({ ...base, turn: index + 1, user: message.content });
    } else if (index >= 0) {
      const turn = turns[index] as TurnRecord;
      const text = turn.agent ? `${turn.agent.message}\n${message.content}` : message.content;
      turn.agent = { message: text, toolCalls: [], latencyMs: 0 };
    }
  }
  const last = turns.at(-1);
  if (last) {
    last.actions.push(...trailing);
    last.userUsage.inputTokens += usage.inputTokens;
    last.userUsage.outputTokens += usage.outputTokens;
    last.userUsage.calls += usage.calls;
  }
  callsByTurn.forEach((calls, index) => {
    const turn = turns[Math.min(index, turns.length - 1)];
    if (!turn || !calls || calls.length === 0) return;
    turn.agent ??= { message: "", toolCalls: [], latencyMs: 0 };
    turn.agent.toolCalls.push(...calls);
  });
  return turns;
}

function ms(value: number): number {
  return Math.round(value * 1000) / 1000;
}
