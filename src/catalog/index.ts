export { CATALOG_SCHEMA_VERSION, Catalog, type LoadCatalogOptions, loadCatalog } from "./catalog.js";
export { effectFromHttp, effectFromName } from "./effect.js";
export { type ExportOpenApiOptions, exportOpenApi, TOOL_ERROR_SCHEMA } from "./export-openapi.js";
export { detectFunctionFormat, toolFromFunction } from "./formats/function-style.js";
export { isOpenApiDocument, toolsFromOpenApi } from "./formats/openapi.js";
export { closeArgumentObject, fromBfclSchema, toJsonSchema2020 } from "./json-schema.js";
export { loadToolFile, type ToolsFromDocumentOptions, toolsFromDocument } from "./load.js";
export { parseDocument, readDocument } from "./read-document.js";
export { resolveLocalRefs } from "./refs.js";
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
