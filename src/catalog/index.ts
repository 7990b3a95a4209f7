export {
  assertComplete,
  CATALOG_SCHEMA_VERSION,
  Catalog,
  type LoadCatalogOptions,
  loadCatalog,
  tolerantCatalog,
} from "./catalog.js";
export { effectFromHttp, effectFromName } from "./effect.js";
export { type ExportOpenApiOptions, exportOpenApi, TOOL_ERROR_SCHEMA } from "./export-openapi.js";
export { detectFunctionFormat, toolFromFunction } from "./formats/function-style.js";
export { isOpenApiDocument, type OpenApiReadOptions, toolsFromOpenApi } from "./formats/openapi.js";
export { convertSwagger2, isSwagger2Document, type Swagger2Conversion } from "./formats/swagger2.js";
export { closeArgumentObject, fromBfclSchema } from "./json-schema.js";
export { loadToolFile, prepareDocument, type ToolsFromDocumentOptions, toolsFromDocument } from "./load.js";
export {
  type NormaliseOptions,
  type SchemaDialect,
  type SchemaDirection,
  SchemaNormaliser,
  type SchemaWarn,
  toJsonSchema2020,
} from "./normalise.js";
export { PROMPT_SCHEMA_CHARS, schemaForPrompt } from "./prompt-schema.js";
export { parseDocument, readDocument } from "./read-document.js";
export { DEFS_PREFIX, embedSchema, RefResolver, resolveLocalRefs, rewriteDefinitionRefs } from "./refs.js";
export {
  type CatalogNote,
  describeNote,
  LOAD_REPORT_SCHEMA_VERSION,
  LoadReport,
  summariseLoad,
} from "./report.js";
export { repairSchema } from "./schema-check.js";
export {
  type HttpBinding,
  type JsonObjectSchema,
  type JsonSchema,
  TOOL_EFFECTS,
  TOOL_FORMATS,
  type Tool,
  type ToolCall,
  type ToolEffect,
  type ToolFormat,
  type ToolOrigin,
} from "./tool.js";
