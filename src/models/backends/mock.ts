import { z } from "zod";
import { readDocument } from "../../catalog/read-document.js";
import { TerrariumError } from "../../core/errors.js";
import { formatPointer } from "../../core/json-pointer.js";
import type {
  BackendCapabilities,
  BackendRequest,
  BackendResponse,
  ModelBackend,
  StructuredMode,
} from "../types.js";

/**
 * `mock:<file>`: a model that replays scripted replies, for tests and demos that need no network.
 *
 * ```yaml
 * structured: native          # how it claims to do structured output (native | emulated | grammar)
 * loop: false                 # start over when the script runs out (otherwise that is an error)
 * replies:
 *   - text: "Hello"
 *   - json: { city: Paris }   # written out as JSON text
 *   - toolCalls: [{ name: get_weather, arguments: { city: Paris } }]
 *   - when: "refund"          # only answers a request whose last user message matches this regex
 *     text: "Refund issued"
 *   - error: { status: 429, message: slow down }
 * ```
 */
const Reply = z
  .object({
    when: z.string().optional(),
    text: z.string().optional(),
    json: z.unknown().optional(),
    toolCalls: z
      .array(z.object({ name: z.string(), arguments: z.unknown().default({}), id: z.string().optional() }))
      .optional(),
    usage: z.object({ inputTokens: z.number().int(), outputTokens: z.number().int() }).optional(),
    error: z.object({ status: z.number().int().optional(), message: z.string() }).optional(),
  })
  .strict();

const Script = z
  .object({
    structured: z.enum(["native", "emulated", "grammar"]).default("native"),
    loop: z.boolean().default(false),
    replies: z.array(Reply).min(1),
  })
  .strict();

export type MockScript = z.input<typeof Script>;

export class MockBackend implements ModelBackend {
  readonly provider = "mock";
  readonly capabilities: BackendCapabilities;
  private readonly script: z.infer<typeof Script>;
  private readonly used = new Set<number>();

  constructor(
    readonly name: string,
    script: unknown,
    file?: string,
  ) {
    const parsed = Script.safeParse(script);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new TerrariumError("CONFIG_INVALID", `mock script: ${issue?.message ?? "invalid"}`, {
        where: { file, pointer: formatPointer((issue?.path ?? []).map(String)) },
      });
    }
    this.script = parsed.data;
    this.capabilities = { structured: this.script.structured as StructuredMode, tools: true, seed: true };
  }

  static fromFile(name: string, file: string): MockBackend {
    return new MockBackend(name, readDocument(file), file);
  }

  async generate(request: BackendRequest): Promise<BackendResponse> {
    const lastUser = [...request.messages].reverse().find((m) => m.role === "user")?.content ?? "";
    const index = this.nextReply(lastUser);
    const reply = this.script.replies[index] as z.infer<typeof Reply>;
    if (reply.error) {
      const error = new Error(reply.error.message) as Error & { statusCode?: number };
      if (reply.error.status !== undefined) error.statusCode = reply.error.status;
      throw error;
    }
    const text = reply.text ?? (reply.json !== undefined ? JSON.stringify(reply.json) : "");
    const toolCalls = (reply.toolCalls ?? []).map((call, i) => ({
      id: call.id ?? `call_${index}_${i}`,
      name: call.name,
      arguments: call.arguments,
    }));
    const promptChars = request.messages.reduce((sum, m) => sum + m.content.length, 0);
    return {
      text,
      toolCalls,
      finishReason: toolCalls.length > 0 ? "tool-calls" : "stop",
      usage: {
        // A rough 4-characters-per-token estimate, so usage accounting has something to add up.
        inputTokens: reply.usage?.inputTokens ?? Math.ceil(promptChars / 4),
        outputTokens:
          reply.usage?.outputTokens ?? Math.ceil((text.length + JSON.stringify(toolCalls).length) / 4),
        cachedInputTokens: 0,
      },
    };
  }

  /** The first unused reply (in script order) that applies to this request; a looping script starts over. */
  private nextReply(lastUser: string): number {
    const replies = this.script.replies;
    for (let pass = 0; pass < 2; pass++) {
      for (let index = 0; index < replies.length; index++) {
        if (this.used.has(index)) continue;
        const when = replies[index]?.when;
        if (when !== undefined && !new RegExp(when, "i").test(lastUser)) continue;
        this.used.add(index);
        return index;
      }
      if (!this.script.loop) break;
      this.used.clear();
    }
    throw new TerrariumError(
      "MODEL_CALL_FAILED",
      `${this.name}: the script has no reply left for this request${lastUser ? ` (last user message: ${JSON.stringify(lastUser.slice(0, 80))})` : ""}`,
    );
  }
}
