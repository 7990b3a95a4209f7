export { BUILTIN_ENVIRONMENTS } from "./corpus/index.js";
export {
  defineEnvironment,
  type EnvironmentDefinition,
  SEEDED_CLOCK_START,
  type ToolContext,
  ToolFailure,
  type ToolImplementation,
} from "./define.js";
export { makeTransition } from "./transition.js";
export type {
  CreateOptions,
  Environment,
  EnvironmentInstance,
  EnvironmentSource,
  Transition,
} from "./types.js";
