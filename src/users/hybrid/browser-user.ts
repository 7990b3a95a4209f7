import { interruptedError, interruptible } from "../../core/interrupt.js";
import type { CallResult, Models } from "../../models/hub.js";
import type { Message, ToolSpec } from "../../models/types.js";
import {
  type ActionResult,
  type ChatLocator,
  DEFAULT_CHAT_LOCATOR,
  type Observation,
  type UiAction,
} from "../browser/types.js";
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
  /**
   * Aborted when the run is interrupted (Ctrl-C): no new step starts, the step in flight is abandoned, and
   * the conversation throws `INTERRUPTED` instead of returning a result (nothing of it is a finished run).
   */
  signal?: AbortSignal;
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
  /**
   * One turn per user message the chat widget shows, then, when the user did something after its last
   * message (browsed, ended the conversation, ran out of steps), one last turn with those actions and
   * their model usage: its `user` is "" (or the stopping message, which is never sent) and it has no reply.
   */
  turns: TurnRecord[];
  endReason: EndReason;
  /** What went wrong, or what the run could not find (no chat message on the page). */
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

/** What a turn has spent so far: the user's model calls and the time in its model, its tools and the page. */
interface TurnSpend {
  usage: TokenCount & { calls: number };
  userModelMs: number;
  toolsMs: number;
}

const noSpend = (): TurnSpend => ({
  usage: { inputTokens: 0, outputTokens: 0, calls: 0 },
  userModelMs: 0,
  toolsMs: 0,
});

/**
 * The UI-only or hybrid user (VISTA): each step it observes the page, keeps its plan up to date (when the
 * agent said something new), lets the router choose between the page and its own tools (hybrid only),
 * and takes one action. A turn ends when a new user message appears in the chat widget; the
 * conversation is read from the widget at the end. Stops: `terminate`, a stop token in a typed message
 * (that message is not typed: a stopping message never reaches the agent, as in API mode), the turn
 * budget once the agent answered (`max_turns`), the step budget (`max_steps`), or the same action again
 * and again (`repetition`).
 *
 * Timing per turn: `userModelMs` is the user's model calls, `toolsMs` its observations, page actions and
 * own tools, `agentMs` (and the reply's `latencyMs`) from the action that sent the message until the
 * reply was seen in the widget, less the user's own work meanwhile.
 */
export async function simulateBrowserConversation(
  options: BrowserConversationOptions,
): Promise<BrowserConversationResult> {
  const { models, scenario, page, mode, signal } = options;
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
  const chatLocator = options.chat ?? DEFAULT_CHAT_LOCATOR;
  const steps: BrowserStep[] = [];
  const recent: string[] = [];
  const pending: UserAction[] = [];
  let spend = noSpend();
  let plan: UserTurnPlan | undefined;
  let agentSeen = -1;
  const opened: TurnRecord[] = [];
  let userMessages = 0;
  let endReason: EndReason | undefined;
  let error: string | undefined;
  let stopMessage: string | undefined;
  let notes: string[] = [];
  let firstUrl: string | undefined;
  // The user's own work (model calls, actions) so far, to tell it apart from the agent's time.
  let busyMs = 0;
  let lastAct: { startedAt: number; ms: number } | undefined;
  let awaiting: { turn: TurnRecord; sentAt: number; busyAt: number } | undefined;
  // The agent's tool calls, placed on the turn that was current when they were first seen.
  const callsByTurn: AgentToolCallRecord[][] = [];
  let callsSeen = 0;
  const guard = <T>(work: Promise<T>): Promise<T> => interruptible(work, signal);
  const collectCalls = async (sessionId: string | undefined, userMessagesNow: number) => {
    if (!sessionId || !options.agentCalls) return;
    const calls = await guard(options.agentCalls(sessionId));
    const fresh = calls.slice(callsSeen);
    callsSeen = calls.length;
    const at = Math.max(0, userMessagesNow - 1);
    callsByTurn[at] = [...(callsByTurn[at] ?? []), ...fresh];
  };
  const account = (result: CallResult) => {
    spend.usage.inputTokens += result.usage.inputTokens;
    spend.usage.outputTokens += result.usage.outputTokens;
    spend.usage.calls += 1;
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
  /** The reply to the awaited message is on the page: the agent's time is measured up to now. */
  const replySeen = (now: number) => {
    if (!awaiting) return;
    const agentMs = ms(Math.max(0, now - awaiting.sentAt - (busyMs - awaiting.busyAt)));
    awaiting.turn.timing.agentMs = agentMs;
    awaiting = undefined;
  };

  try {
    for (let step = 1; step <= maxSteps && !endReason; step++) {
      if (signal?.aborted) throw interruptedError();
      const observed = performance.now();
      const observation = await guard(page.observe());
      const chat = await guard(page.readChat(options.chat));
      const observeMs = performance.now() - observed;
      firstUrl ??= observation.url;
      const agentCount = chat.messages.filter((m) => m.role === "agent").length;
      const userCount = chat.messages.filter((m) => m.role === "user").length;
      if (userCount > userMessages) {
        // The user's message reached the widget: the actions since the last one belong to this turn. The
        // action that sent it was the agent's time (its settle waited for the answer), not the user's.
        const userTexts = chat.messages.filter((m) => m.role === "user");
        if (lastAct) spend.toolsMs = Math.max(0, spend.toolsMs - lastAct.ms);
        for (; userMessages < userCount; userMessages++) {
          const turn = openTurn(
            userMessages + 1,
            userTexts[userMessages]?.content ?? "",
            plan,
            pending.splice(0),
            spend,
          );
          spend = noSpend();
          opened.push(turn);
        }
        const turn = opened.at(-1) as TurnRecord;
        awaiting = { turn, sentAt: lastAct?.startedAt ?? observed, busyAt: busyMs };
      }
      // Looking at the page while the agent has not answered yet is waiting for the agent.
      if (!awaiting) spend.toolsMs += observeMs;
      else if (lastIsAgent(chat.messages)) replySeen(performance.now());
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
        const planned = await guard(
          models.generateObject<UserTurnPlan>({
            ...call(options.model, `${turnOf(step)}/plan`),
            messages: [...base, { role: "user", content: view(PLAN_ASK) }],
            schema: USER_TURN_PLAN_SCHEMA,
            schemaName: "user_turn_plan",
          }),
        );
        modelMs += account(planned);
        plan = planned.object;
      }
      let channel: "ui" | "api" = "ui";
      let reason: string | undefined;
      if (tools.length > 0) {
        const routed = await guard(
          models.generateObject<RouteDecision>({
            ...call(options.routerModel ?? options.model, `${turnOf(step)}/route`),
            messages: [...base, { role: "user", content: view(ROUTE_ASK) }],
            schema: ROUTE_SCHEMA,
            schemaName: "route_decision",
          }),
        );
        modelMs += account(routed);
        channel = routed.object.channel;
        reason = routed.object.reason;
      }
      let action: UserAction;
      let actStarted = performance.now();
      if (channel === "api") {
        const answer = await guard(
          models.generateWithTools({
            ...call(options.model, `${turnOf(step)}/api`),
            messages: [...base, { role: "user", content: view(API_ASK) }],
            tools,
            toolChoice: "required",
          }),
        );
        modelMs += account(answer);
        const first = answer.toolCalls[0];
        actStarted = performance.now();
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
          const result = await guard(options.toolbox.call(first.name, first.arguments));
          action = { kind: "tool", tool: first.name, arguments: first.arguments, ...result };
        }
      } else {
        const answer = await guard(
          models.generateObject<UiActionAnswer>({
            ...call(options.model, `${turnOf(step)}/ui`),
            messages: [...base, { role: "user", content: view(UI_ASK) }],
            schema: UI_ACTION_SCHEMA,
            schemaName: "ui_action",
            // An action missing what it needs is asked again, never cached: a rerun must not replay it.
            accept: (object) => {
              const checked = toUiAction(object);
              return "error" in checked ? [checked.error] : undefined;
            },
          }),
        );
        modelMs += account(answer);
        actStarted = performance.now();
        const checked = toUiAction(answer.object);
        if ("error" in checked) {
          action = uiAction(answer.object as never, { ok: false, error: checked.error }, observation);
          notes.push(`Your last action was not valid: ${checked.error}.`);
        } else {
          const outcome = await guard(takeUiAction(page, checked.action));
          if (outcome.stop) {
            endReason = outcome.stop;
            stopMessage = outcome.message;
          }
          action = uiAction(checked.action, outcome.result, observation, outcome.note);
        }
      }
      const actMs = performance.now() - actStarted;
      spend.userModelMs += modelMs;
      spend.toolsMs += actMs;
      busyMs += modelMs + actMs;
      lastAct = { startedAt: actStarted, ms: actMs };
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
        timing: { observeMs: ms(observeMs), modelMs: ms(modelMs), actMs: ms(actMs) },
      };
      steps.push(record);
      options.onStep?.(record);
    }
    // The loop ran out of steps without another reason to end.
    endReason ??= "max_steps";
  } catch (failure) {
    // Once interrupted, whatever failed (often the page, closed under the run) is the interrupt's doing.
    if (signal?.aborted) throw interruptedError();
    endReason = "user_error";
    error = `the browser user failed: ${failure instanceof Error ? failure.message : String(failure)}`;
  }

  // VISTA reads the conversation from the widget at the end.
  const final = await guard(page.readChat(options.chat)).catch(() => {
    if (signal?.aborted) throw interruptedError();
    return { messages: [] as Array<{ role: "user" | "agent"; content: string }>, sessionId: undefined };
  });
  // A reply still awaited: the agent's time is what the run waited for it.
  replySeen(performance.now());
  await collectCalls(final.sessionId, final.messages.filter((m) => m.role === "user").length).catch(
    () => undefined,
  );
  if (signal?.aborted) throw interruptedError();
  const turns = assembleTurns(final.messages, opened, callsByTurn);
  // What the user did after its last message is a turn of its own, without a reply.
  if (pending.length > 0 || spend.usage.calls > 0)
    turns.push(openTurn(turns.length + 1, stopMessage ?? "", plan, pending, spend));
  const last = turns.at(-1);
  if (last && (endReason === "stop" || endReason === "transfer" || endReason === "out_of_scope"))
    last.stop = endReason;
  if (final.messages.length === 0 && userMessages === 0 && !error) {
    const where = chatLocator.frame ? ` inside the frame ${chatLocator.frame}` : " in any frame";
    error = `no chat message was found on ${firstUrl ?? "the page"}: nothing matched the chat widget's message selector ${chatLocator.message}${where}, so no message reached the agent (the page has no chat widget there, or the user never wrote in it)`;
  }
  return {
    turns,
    endReason,
    ...(error ? { error } : {}),
    steps,
    transcript: final.messages,
    ...(final.sessionId ? { sessionId: final.sessionId } : {}),
  };
}

/**
 * A UI action, with the stop contract applied to typed text: a message with a stop token is not typed at
 * all (the stopping message never reaches the agent, as in API mode); the text before the token is kept.
 */
async function takeUiAction(
  page: PageSession,
  action: UiAction,
): Promise<{ result: ActionResult; stop?: EndReason; message?: string; note?: string }> {
  if (action.type === "terminate") return { result: await page.act(action), stop: "stop" };
  if (action.type === "type") {
    const parsed = parseUserTurn(action.text);
    if (parsed.stop)
      return {
        result: { ok: true, actionMs: 0, settleMs: 0 },
        stop: parsed.stop,
        message: parsed.message,
        note: "not typed: the message ends the conversation",
      };
  }
  return { result: await page.act(action) };
}

function uiAction(
  action: UiAction,
  result: Pick<ActionResult, "ok" | "error">,
  observation: Observation,
  note?: string,
): UserAction {
  return {
    kind: "ui",
    tool: action.type,
    arguments: action,
    status: result.ok ? "ok" : "error",
    message: result.ok ? (note ?? "done") : (result.error ?? "failed"),
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

/**
 * A turn opened when its user message appeared, with what the user spent since the last one; its text
 * and the agent's reply are taken from the widget at the end (the text seen now is kept if the widget
 * lost the message by then).
 */
function openTurn(
  turn: number,
  user: string,
  plan: UserTurnPlan | undefined,
  actions: UserAction[],
  spend: TurnSpend,
): TurnRecord {
  return {
    turn,
    ...(plan ? { plan } : {}),
    actions,
    user,
    userUsage: { ...spend.usage },
    timing: { userModelMs: ms(spend.userModelMs), toolsMs: ms(spend.toolsMs), agentMs: 0 },
  };
}

/**
 * The turns from the widget's final transcript: user message i with the agent's messages after it, the
 * actions, usage and timing recorded when it appeared. The agent's tool calls go to the turn that was
 * current when they were seen.
 */
function assembleTurns(
  messages: ReadonlyArray<{ role: "user" | "agent"; content: string }>,
  opened: TurnRecord[],
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
      turn.agent = { message: text, toolCalls: [], latencyMs: turn.timing.agentMs };
    }
  }
  // Turns the widget no longer shows (a "new chat" cleared it) keep what was seen when they were sent.
  for (const turn of opened.slice(turns.length)) turns.push({ ...turn, turn: turns.length + 1 });
  callsByTurn.forEach((calls, index) => {
    const turn = turns[Math.min(index, turns.length - 1)];
    if (!turn || !calls || calls.length === 0) return;
    turn.agent ??= { message: "", toolCalls: [], latencyMs: turn.timing.agentMs };
    turn.agent.toolCalls.push(...calls);
  });
  return turns;
}

function ms(value: number): number {
  return Math.round(value * 1000) / 1000;
}
