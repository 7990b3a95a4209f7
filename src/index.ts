export * from "./bench/bfcl/index.js";
export * from "./bench/envsim/index.js";
// Names a lower layer exports too: the lower layer's stays, the users one is renamed.
export { escapeHtml } from "./bench/envsim/index.js";
export * from "./catalog/index.js";
export * from "./core/index.js";
export * from "./envs/index.js";
export * from "./mcp/index.js";
export * from "./models/index.js";
export * from "./server/index.js";
export * from "./sessions/index.js";
export * from "./sim/index.js";
export type { ChecklistItem } from "./task/index.js";
export * from "./task/index.js";
export type { ChecklistItem as ScenarioChecklistItem } from "./users/index.js";
export * from "./users/index.js";
export * from "./validate/index.js";
