export { createMcpServer, listToolsPage, MCP_TOOLS_PAGE_CHARS, McpHttpEndpoint } from "./server.js";
export { isMcpSource, loadToolSources, toolsFromMcpServer } from "./sources.js";
