/**
 * Listing a server's tools: every page of `tools/list`, followed by its `nextCursor`, with a bound
 * on the pages (a server that hands out cursors forever is refused, not followed forever).
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { describeError } from '../../machines/describe-error.js';
import { McpToolsError } from './errors.js';

/** The most `tools/list` pages read from one server. */
export const MAX_PAGES = 100;

/** The request options of every request made to the server. */
export interface RequestLimits {
  signal?: AbortSignal;
  timeout?: number;
}

/** Every tool the server lists, as it sent them (each still to be checked). */
export async function listAll(client: Client, limits: RequestLimits, where: string): Promise<unknown[]> {
  const tools: unknown[] = [];
  const cursors = new Set<string>();
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    let result: { tools: unknown; nextCursor?: unknown };
    try {
      result = await client.listTools(cursor === undefined ? {} : { cursor }, limits);
    } catch (error) {
      throw new McpToolsError(`${where}: tools/list failed: ${describeError(error)}`, [], error);
    }
    const { tools: listed, nextCursor } = result;
    if (!Array.isArray(listed)) throw new McpToolsError(`${where}: tools/list answered without a list of tools`);
    tools.push(...listed);
    if (nextCursor === undefined) return tools;
    if (typeof nextCursor !== 'string' || cursors.has(nextCursor)) {
      throw new McpToolsError(`${where}: tools/list gave the cursor ${JSON.stringify(nextCursor)} again`);
    }
    cursors.add(nextCursor);
    cursor = nextCursor;
  }
  throw new McpToolsError(`${where}: tools/list has more than ${MAX_PAGES} pages`);
}

/** The server's current listings of the tool named `name` (none, one, or a hostile several). */
export async function findTool(client: Client, name: string, limits: RequestLimits): Promise<unknown[]> {
  const tools = await listAll(client, limits, 'mcpTools');
  return tools.filter((tool) => (tool as { name?: unknown } | null)?.name === name);
}
