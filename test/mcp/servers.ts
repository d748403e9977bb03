/**
 * The MCP servers the tests talk to, written with the SDK's server API: `ordersServer` (an
 * `McpServer` with honest tools of every kind) and `rawServer` (a low-level `Server` that answers
 * `tools/list` with whatever a test gives it: pages, hostile lists).
 */

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { McpServer, type RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { FENCE_META, IDEMPOTENCY_KEY_META } from '../../src/mcp/index.js';

/** What the server saw of one call. */
export interface Seen {
  tool: string;
  /** The idempotency key in the call's `_meta`, as the server received it. */
  key: unknown;
  /** The fencing token in the call's `_meta`, when the run sent one. */
  fence?: unknown;
  args: unknown;
  /** The server saw the request cancelled. */
  cancelled?: boolean;
}

/**
 * An `McpServer` of an order desk; `seen` gets every call it receives. `hold`, when given, is
 * awaited by `refund` and `note` before they answer (a call in flight, for a crash to happen in).
 */
export function ordersServer(
  seen: (call: Seen) => void,
  hold: () => Promise<void> = async () => {},
): { server: McpServer; lookup: RegisteredTool } {
  const server = new McpServer({ name: 'orders', version: '1.0.0' });
  const saw = (tool: string, args: unknown, meta: Record<string, unknown> | undefined) =>
    seen({ tool, key: meta?.[IDEMPOTENCY_KEY_META], fence: meta?.[FENCE_META], args });
  const order = { order: z.string() };
  const lookup = server.registerTool(
    'lookup',
    { description: 'Look an order up', inputSchema: order, annotations: { readOnlyHint: true } },
    async (args, extra) => {
      saw('lookup', args, extra._meta);
      return { content: [{ type: 'text', text: `order ${args.order}: shipped` }] };
    },
  );
  server.registerTool(
    'refund',
    {
      description: 'Refund an order, in cents',
      inputSchema: { order: z.string(), cents: z.number().int().positive() },
      outputSchema: { refunded: z.number(), order: z.string() },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    },
    async (args, extra) => {
      saw('refund', args, extra._meta);
      await hold();
      const result = { refunded: args.cents, order: args.order };
      return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
    },
  );
  server.registerTool(
    'note',
    { description: 'Add a note to an order', inputSchema: { order: z.string(), text: z.string() } },
    async (args, extra) => {
      saw('note', args, extra._meta);
      await hold();
      return { content: [] };
    },
  );
  server.registerTool('fail', { inputSchema: order }, async (args, extra) => {
    saw('fail', args, extra._meta);
    return { isError: true, content: [{ type: 'text', text: `order ${args.order} not found` }] };
  });
  server.registerTool('boom', { inputSchema: order, annotations: { readOnlyHint: true } }, async (args, extra) => {
    saw('boom', args, extra._meta);
    throw new Error('the database is down');
  });
  server.registerTool('label', { inputSchema: order, annotations: { readOnlyHint: true } }, async (args, extra) => {
    saw('label', args, extra._meta);
    return {
      content: [
        { type: 'text', text: `label of ${args.order}` },
        { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
        { type: 'text', text: 'printed' },
      ],
    };
  });
  server.registerTool('hang', { inputSchema: order, annotations: { readOnlyHint: true } }, (args, extra) => {
    saw('hang', args, extra._meta);
    // Never answers; reports the cancellation when the client sends one.
    return new Promise(() => {
      extra.signal.addEventListener('abort', () => seen({ tool: 'hang', key: undefined, args, cancelled: true }));
    });
  });
  return { server, lookup };
}

/** A tool as a hostile or paginating server lists it: anything at all. */
export type RawTool = Record<string, unknown>;

/**
 * A low-level `Server` whose `tools/list` answers with `pages` (the page a cursor names: cursor
 * `"1"` is the second page), and whose `tools/call` answers `answer(name)` (by default, a text
 * naming the tool). In memory, what it answers reaches the client unserialised: not JSON, even.
 */
export function rawServer(
  pages: RawTool[][],
  options: { cursorOf?: (page: number) => unknown; answer?: (name: string) => unknown } = {},
): Server {
  const server = new Server({ name: 'raw', version: '1.0.0' }, { capabilities: { tools: {} } });
  const cursorOf = options.cursorOf ?? ((page: number) => (page + 1 < pages.length ? String(page + 1) : undefined));
  server.setRequestHandler(ListToolsRequestSchema, async (request) => {
    const page = Number(String(request.params?.cursor ?? 0).replace(/^\D*/, ''));
    const nextCursor = cursorOf(page);
    return { tools: pages[page] ?? [], ...(nextCursor === undefined ? {} : { nextCursor }) } as never;
  });
  const answer = options.answer ?? ((name: string) => ({ content: [{ type: 'text', text: `called ${name}` }] }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => answer(request.params.name) as never);
  return server;
}

/** A tool as an honest server lists it. */
export function listed(name: string, extra: RawTool = {}): RawTool {
  return { name, inputSchema: { type: 'object', properties: {} }, ...extra };
}
