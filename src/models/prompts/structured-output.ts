/**
 * Prompts of the structured-output path. Inputs: the JSON Schema the answer must satisfy, and (for the
 * repair turn) the validation errors of the previous answer. Output the model must return: one JSON value
 * that satisfies the schema, with nothing around it.
 */

/** Added to the system prompt when the provider cannot enforce a schema itself (JSON mode only). */
export function schemaInstruction(schema: unknown): string {
  return [
    "Answer with a single JSON value and nothing else: no prose, no Markdown fences.",
    "The value must satisfy this JSON Schema (2020-12):",
    JSON.stringify(schema),
  ].join("\n");
}

/** The user turn that asks for a corrected answer, listing what was wrong with the last one. */
export function repairInstruction(problems: string[]): string {
  return [
    "Your previous answer could not be used:",
    ...problems.map((problem) => `- ${problem}`),
    "Reply again with only the corrected JSON value.",
  ].join("\n");
}
