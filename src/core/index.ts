export { canonicalJson, hashJson, jsonEqual } from "./canonical-json.js";
export { type Clock, isoNow, ManualClock, systemClock } from "./clock.js";
export {
  type BatchErrorKind,
  type ErrorCounts,
  ErrorTally,
  type ErrorVerdict,
  errorKindOf,
  errorVerdict,
} from "./error-tally.js";
export {
  type ErrorCode,
  type ErrorLocation,
  formatLocation,
  isTerrariumError,
  TerrariumError,
  toTerrariumError,
} from "./errors.js";
export { contentId, createIdGenerator, type IdGenerator } from "./ids.js";
export {
  getOwn,
  MAX_JSON_DEPTH,
  setOwn,
  shallowCopy,
  toImmutableJson,
} from "./immutable-json.js";
export { interruptedError, interruptible } from "./interrupt.js";
export {
  applyChanges,
  applyEnvSimChanges,
  arrayIndex,
  diffEnvSim,
  diffJson,
  type EnvSimChange,
  envSimFromJsonChanges,
  envSimToJsonChange,
  type JsonChange,
  type JsonValue,
  PathWriter,
} from "./json-diff.js";
export {
  dottedToPointer,
  escapeToken,
  formatPointer,
  getAtPointer,
  hasPointer,
  joinPointer,
  parsePointer,
  pointerToDotted,
  unescapeToken,
} from "./json-pointer.js";
export { createRandom, type Random, unseededRandom } from "./random.js";
