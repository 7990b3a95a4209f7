import { z } from "zod";

/** Version of the normalised `Scenario` object; bump when its shape changes. */
export const SCENARIO_SCHEMA_VERSION = 1 as const;

/** Limits that keep hostile or accidental inputs bounded. */
export const SCENARIO_LIMITS = {
  /** Bytes of one scenario file. */
  maxScenarioFileBytes: 1024 * 1024,
  /** Bytes of one knowledge file. */
  maxKnowledgeFileBytes: 256 * 1024,
  /** Characters of all knowledge of one scenario, inline and files together. */
  maxKnowledgeChars: 1024 * 1024,
  /** Characters of one text field (profile, goal, agent context, inline knowledge). */
  maxTextChars: 64 * 1024,
  /** Nesting depth of a scenario document. */
  maxDepth: 32,
  /** Scenarios in one file. */
  maxScenariosPerFile: 1000,
  /** Scenario files in one folder. */
  maxFilesPerFolder: 1000,
  /** Knowledge entries, user tools, checklist items, stop conditions, profile attributes per scenario. */
  maxItems: 256,
  /** Largest `max_turns`. */
  maxTurns: 1000,
  /** Steps of a test's `script`. */
  maxScriptSteps: 1000,
} as const;

const L = SCENARIO_LIMITS;

const text = (what: string) =>
  z
    .string({ error: (issue) => (issue.input === undefined ? undefined : `${what} must be a string`) })
    .trim()
    .min(1, `${what} must not be empty`)
    .max(L.maxTextChars, `${what} is longer than ${L.maxTextChars} characters`);

const shortText = (what: string) =>
  z
    .string({ error: (issue) => (issue.input === undefined ? undefined : `${what} must be a string`) })
    .trim()
    .min(1, `${what} must not be empty`)
    .max(200, `${what} is longer than 200 characters`);

export const ScenarioIdSchema = z
  .string({ error: (issue) => (issue.input === undefined ? undefined : "id must be a string") })
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/,
    "id must be 1-128 characters: letters, digits, '.', '_', ':', '-', starting with a letter or digit",
  );

const AttributeName = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_ -]{0,63}$/, "profile attribute names are 1-64 letters, digits, '_', '-', ' '");

export const ProfileAttributeValueSchema = z.union(
  [
    z.string().trim().min(1).max(2000),
    z.number().finite(),
    z.boolean(),
    z.array(z.string().trim().min(1).max(500)).min(1).max(64),
  ],
  { error: "a profile attribute is a non-empty string, a number, a boolean or a list of strings" },
);

export const ProfileAttributesSchema = z
  .record(AttributeName, ProfileAttributeValueSchema)
  .refine((value) => Object.keys(value).length > 0, "profile attributes must not be empty")
  .refine(
    (value) => Object.keys(value).length <= L.maxItems,
    `profile has more than ${L.maxItems} attributes`,
  );

export const ProfileSchema = z.union([text("profile"), ProfileAttributesSchema], {
  error: "profile is second-person text or a map of attributes (name: value)",
});

const KnowledgeFileSchema = z.strictObject({
  file: z.string().min(1).max(1024),
  title: shortText("knowledge title").optional(),
});
const KnowledgeTextSchema = z.strictObject({
  text: text("knowledge text"),
  title: shortText("knowledge title").optional(),
});
export const KnowledgeItemSchema = z.union([text("knowledge"), KnowledgeFileSchema, KnowledgeTextSchema], {
  error: "a knowledge entry is inline text, {text, title?} or {file, title?}",
});
export const KnowledgeSchema = z.union(
  [
    text("knowledge"),
    KnowledgeFileSchema,
    KnowledgeTextSchema,
    z.array(KnowledgeItemSchema).min(1, "knowledge must not be empty").max(L.maxItems),
  ],
  { error: "knowledge is inline text, {file}, {text} or a list of them" },
);

/** JSON Schema object of a user tool's parameters; checked only for its outer shape here. */
const ParametersSchema = z.record(z.string(), z.unknown());

/** Tool names as model APIs accept them. */
export const USER_TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * A user tool, declared only: whoever implements it (the user-tools layer) checks its own fields. The
 * fields of a mocked tool (`data`, `outcomes`) sit at the top level, as that layer's declaration has them.
 */
export const UserToolSchema = z.strictObject({
  name: z.string().regex(USER_TOOL_NAME, "a user tool name is 1-64 letters, digits, '_' or '-'"),
  description: text("user tool description").optional(),
  /** What implements it (e.g. "retrieval", "mock", "environment"); resolved by the user-tools layer. */
  kind: shortText("user tool kind").optional(),
  /** JSON Schema of the arguments. */
  parameters: ParametersSchema.optional(),
  /** A mocked tool's JSON Schema of a successful call's data. */
  data: z.union([z.record(z.string(), z.unknown()), z.boolean()]).optional(),
  /** A mocked tool's declared outcomes ({status, message, data?, dataSchema?, weight?, when?}). */
  outcomes: z.array(z.record(z.string(), z.unknown())).min(1).max(L.maxItems).optional(),
  /** Other configuration for the implementation (an environment reference, a provider...). */
  config: z.unknown().optional(),
});

export const StopSchema = z.strictObject({
  /** Tokens that end the conversation when the user writes them. */
  tokens: z.array(shortText("stop token")).max(L.maxItems).optional(),
  /** Natural-language conditions under which the user ends the conversation. */
  when: z.array(text("stop condition")).max(L.maxItems).optional(),
  /** What the same user message twice does. */
  on_repeat: z.enum(["end", "redirect"]).optional(),
});

const ChecklistItemSchema = z.union([
  text("checklist item"),
  z.strictObject({ id: shortText("checklist id").optional(), text: text("checklist item") }),
]);

export const ExpectedSchema = z.strictObject({
  behaviour: text("expected behaviour").optional(),
  checklist: z.array(ChecklistItemSchema).min(1).max(L.maxItems).optional(),
});

export const RawScenarioSchema = z.strictObject({
  /** The scenario format's version; optional in hand-written files, written by `users generate`. */
  schemaVersion: z
    .literal(SCENARIO_SCHEMA_VERSION, {
      error: `schemaVersion must be ${SCENARIO_SCHEMA_VERSION} (the only version)`,
    })
    .optional(),
  id: ScenarioIdSchema,
  description: text("description").optional(),
  tags: z.array(shortText("tag")).max(64).optional(),
  profile: ProfileSchema,
  goal: text("goal"),
  knowledge: KnowledgeSchema,
  agent_context: text("agent_context").optional(),
  user_tools: z.array(UserToolSchema).max(L.maxItems).optional(),
  max_turns: z
    .number({ error: (issue) => (issue.input === undefined ? undefined : "max_turns must be a number") })
    .int("max_turns must be a whole number")
    .min(1, "max_turns must be at least 1")
    .max(L.maxTurns, `max_turns must be at most ${L.maxTurns}`),
  stop: StopSchema.optional(),
  expected: ExpectedSchema.optional(),
  /**
   * Makes the scenario a test (`users test`, `terrarium/testing`): its steps, checked one by one by the
   * script parser (`testing/script.ts`) so that each problem is reported at its step.
   */
  script: z
    .array(z.unknown(), { error: "script must be a list of steps" })
    .min(1, "script must not be empty")
    .max(L.maxScriptSteps, `script has more than ${L.maxScriptSteps} steps`)
    .optional(),
});

/**
 * A test (a scenario with `script`) needs only `id` and `script`: the simulated user's fields matter to
 * `simulate` steps alone, which the script parser checks for them.
 */
export const RawScenarioTestSchema = RawScenarioSchema.partial({
  profile: true,
  goal: true,
  knowledge: true,
  max_turns: true,
});

export type RawScenario = z.infer<typeof RawScenarioSchema>;
export type RawScenarioTest = z.infer<typeof RawScenarioTestSchema>;
export type ProfileAttributeValue = z.infer<typeof ProfileAttributeValueSchema>;
export type ProfileAttributes = Record<string, ProfileAttributeValue>;

/** The keys a scenario may have, for "did you mean" suggestions. */
export const SCENARIO_KEYS = Object.keys(RawScenarioSchema.shape);

/** The JSON Schema of a scenario file's scenario (for editors and documentation). */
export function scenarioJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(RawScenarioSchema, { io: "input", unrepresentable: "any" }) as Record<
    string,
    unknown
  >;
  // The script is checked step by step in code (for located messages); editors get its shape here.
  const properties = schema.properties as Record<string, Record<string, unknown>> | undefined;
  if (properties?.script) properties.script = { ...properties.script, items: SCRIPT_STEP_JSON_SCHEMA };
  return schema;
}

const one = (key: string, value: Record<string, unknown>) => ({
  type: "object",
  properties: { [key]: value },
  required: [key],
  additionalProperties: false,
});
const regex = { type: "string", minLength: 1, description: "a regular expression (JavaScript syntax)" };
const flags = { type: "string", pattern: "^[imsu]*$" };
const nonEmpty = { type: "string", minLength: 1 };

/** One step of a test's script, as JSON Schema. */
export const SCRIPT_STEP_JSON_SCHEMA = {
  oneOf: [
    { const: "stop" },
    one("stop", { type: ["null", "boolean"] }),
    one("user", nonEmpty),
    one("simulate", {
      oneOf: [{ type: "integer", minimum: 1, maximum: L.maxTurns }, { const: "until_stop" }],
    }),
    one("expect_reply", {
      oneOf: [
        {
          type: "object",
          properties: { matches: regex, flags },
          required: ["matches"],
          additionalProperties: false,
        },
        {
          type: "object",
          properties: { not_matches: regex, flags },
          required: ["not_matches"],
          additionalProperties: false,
        },
      ],
    }),
    one("expect_tool_call", {
      oneOf: [
        nonEmpty,
        {
          type: "object",
          properties: { name: nonEmpty, arguments: {} },
          required: ["name"],
          additionalProperties: false,
        },
      ],
    }),
    one("expect_no_tool_call", nonEmpty),
    one("expect_state", {
      type: "object",
      properties: {
        pointer: { type: "string", description: "a JSON Pointer into the agent's tools' state" },
        equals: {},
      },
      required: ["pointer", "equals"],
      additionalProperties: false,
    }),
    one("judge", { oneOf: [nonEmpty, { type: "array", items: nonEmpty, minItems: 1 }] }),
  ],
} as const;
