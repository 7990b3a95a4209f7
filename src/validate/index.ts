export { AJV_OPTIONS, createAjv, SchemaCompiler } from "./ajv.js";
export {
  addToSummary,
  type DatasetSummary,
  emptySummary,
  readLines,
  VALIDATION_RECORD_SCHEMA_VERSION,
  type ValidateDatasetOptions,
  type ValidationRecord,
  validateDatasetLines,
} from "./dataset.js";
export { describeExpectation, describePath } from "./describe.js";
export { type CallLike, type CallValidation, CallValidator } from "./validator.js";
export { toViolations, type Violation } from "./violations.js";
