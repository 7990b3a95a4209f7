import type { Catalog } from "../catalog/catalog.js";
import { hashJson } from "../core/canonical-json.js";
import type { Models } from "../models/hub.js";
import { checklistSystemPrompt, checklistUserPrompt } from "./prompts/checklist.js";
import { judgeSystemPrompt, judgeUserPrompt } from "./prompts/judge.js";

export interface ChecklistItem {
  description: string;
}

export interface JudgedItem extends ChecklistItem {
  status: "success" | "failed" | "unknown";
  reasoning: string;
}

export interface Judgement {
  items: JudgedItem[];
  success: boolean;
  /** Fraction of items judged a success (0 when there are none). */
  score: number;
  /** The unmet items, worded for the planner's next attempt. */
  feedback: string;
}

export interface JudgedCall {
  name: string;
  arguments: unknown;
  status: string;
  result: unknown;
}

/** Writes checklists with a model, once per (task, earlier tasks): the same task gets the same checklist. */
export class ChecklistWriter {
  private readonly cache = new Map<string, Promise<ChecklistItem[]>>();

  constructor(
    private readonly models: Models,
    private readonly role = "checklist",
  ) {}

  write(task: string, previousTasks: string[] = [], scope?: string): Promise<ChecklistItem[]> {
    const key = hashJson({ task, previousTasks });
    let items = this.cache.get(key);
    if (!items) {
      items = this.models
        .generateObject<{ items: ChecklistItem[] }>({
          role: this.role,
          temperature: 0,
          ...(scope ? { scope } : {}),
          schemaName: "checklist",
          schema: {
            type: "object",
            properties: {
              items: {
                type: "array",
                minItems: 1,
                items: {
                  type: "object",
                  properties: { description: { type: "string", minLength: 1 } },
                  required: ["description"],
                  additionalProperties: false,
                },
              },
            },
            required: ["items"],
            additionalProperties: false,
          },
          messages: [
            { role: "system", content: checklistSystemPrompt() },
            { role: "user", content: checklistUserPrompt({ task, previousTasks }) },
          ],
        })
        .then((result) => result.object.items);
      this.cache.set(key, items);
      items.catch(() => this.cache.delete(key));
    }
    return items;
  }
}

/** Judges an attempt against a checklist with a model; untrusted material reaches it only as data. */
export async function judgeAttempt(
  models: Models,
  input: {
    task: string;
    checklist: ChecklistItem[];
    state: unknown;
    calls: JudgedCall[];
    agentMessage: string;
    previousTurns?: Array<{ task: string; agentMessage: string }>;
    catalog?: Catalog;
  },
  options: { role?: string; scope?: string; seed?: number } = {},
): Promise<Judgement> {
  const result = await models.generateObject<{ items: JudgedItem[] }>({
    role: options.role ?? "judge",
    temperature: 0,
    ...(options.scope ? { scope: options.scope } : {}),
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
    schemaName: "judgement",
    schema: {
      type: "object",
      properties: {
        items: {
          type: "array",
          minItems: input.checklist.length,
          maxItems: input.checklist.length,
          items: {
            type: "object",
            properties: {
              description: { type: "string" },
              status: { enum: ["success", "failed", "unknown"] },
              reasoning: { type: "string" },
            },
            required: ["description", "status", "reasoning"],
            additionalProperties: false,
          },
        },
      },
      required: ["items"],
      additionalProperties: false,
    },
    messages: [
      { role: "system", content: judgeSystemPrompt() },
      {
        role: "user",
        content: judgeUserPrompt({
          task: input.task,
          checklist: input.checklist,
          state: input.state,
          calls: input.calls,
          agentMessage: input.agentMessage,
          previousTurns: input.previousTurns ?? [],
          ...(input.catalog
            ? {
                tools: input.catalog.tools.map((tool) => ({
                  name: tool.name,
                  description: tool.description,
                })),
              }
            : {}),
        }),
      },
    ],
  });
  const items = result.object.items;
  const successes = items.filter((item) => item.status === "success").length;
  const unmet = items.filter((item) => item.status !== "success");
  return {
    items,
    success: items.length > 0 && unmet.length === 0,
    score: items.length ? successes / items.length : 0,
    feedback: unmet.map((item) => `- ${item.description}: ${item.status} (${item.reasoning})`).join("\n"),
  };
}
