export { AJV_OPTIONS, createAjv, SchemaCompiler } from "./ajv.js";
export { describeExpectation, describePath } from "./describe.js";
export { type CallLike, type CallValidation, CallValidator } from "./validator.js";
export { toViolations, type Violation } from "./violations.js";
