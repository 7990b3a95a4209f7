export { createMcpServer, McpHttpEndpoint } from "./server.js";
export { isMcpSource, loadToolSources, toolsFromMcpServer } from "./sources.js";
