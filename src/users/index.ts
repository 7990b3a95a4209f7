/**
 * User simulation (VISTA, API mode): scenarios, the user's tools, the simulated user, the agent under
 * test, the judges, the metrics, runs with transcripts and summaries, reports, and scenario generation.
 */
export * from "./agents/index.js";
export * from "./browser/index.js";
export * from "./conversation.js";
export * from "./demo/index.js";
export * from "./generate/index.js";
export * from "./hybrid/index.js";
// Names two folders share: the explicit export picks one, the other is renamed.
export type { RealismVerdict, RunJudgement } from "./judges/index.js";
export * from "./judges/index.js";
export type { RealismVerdict as RealismFlagsVerdict } from "./metrics/index.js";
export * from "./metrics/index.js";
export * from "./report/index.js";
export type { RunJudgement as StoredRunJudgement } from "./run/index.js";
export * from "./run/index.js";
export * from "./scenario/index.js";
export * from "./simulator/index.js";
export * from "./testing/index.js";
export * from "./tools/index.js";
export * from "./turns/index.js";
