/**
 * `tollgate/mcp`: the tools of an MCP server (`@modelcontextprotocol/sdk` 1.x, any transport:
 * stdio, Streamable HTTP) as Tollgate tools, behind the approval gate. The SDK is a peer
 * dependency, used through the client you pass: this module imports only its types.
 */
export { McpToolError, type McpToolProblem, McpToolsError } from './errors.js';
export { MAX_PAGES } from './list.js';
export type { McpToolsOptions } from './options.js';
export { resultOf } from './result.js';
export { MAX_SCHEMA_LENGTH, type McpInputSchema } from './schema.js';
export { FENCE_META, IDEMPOTENCY_KEY_META, MAX_DESCRIPTION_LENGTH, mcpTools } from './tools.js';
