/**
 * `mcpTools` against a real MCP server (the SDK's `McpServer`), connected in memory: what each
 * tool becomes (trusted and untrusted), the call with its `_meta` key, and what results become.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { OptionsError, type Tool, toolDeclarations } from '../../src/index.js';
import { FENCE_META, IDEMPOTENCY_KEY_META, McpToolError, McpToolsError, mcpTools } from '../../src/mcp/index.js';
import { ordersServer, type Seen } from './servers.js';
import { type Connected, inMemory } from './support.js';

let connected: Connected | undefined;
afterEach(async () => {
  await connected?.close();
  connected = undefined;
});

async function orders(): Promise<{ client: Connected['client']; seen: Seen[] }> {
  const seen: Seen[] = [];
  connected = await inMemory(ordersServer((call) => seen.push(call)).server);
  return { client: connected.client, seen };
}

const byName = (tools: Tool[]) => new Map(tools.map((t) => [t.name, t]));
const call = (
  tool: Tool | undefined,
  args: object,
  key = 'run-1:1',
  signal = new AbortController().signal,
  fence: number | null = null,
) => {
  if (!tool) throw new Error('no such tool');
  return tool.fn(args, key, { signal, runId: 'run-1', step: 1, key, approvedCallId: null, fence });
};
const gate = (tool: Tool | undefined) => ({
  sideEffect: tool?.sideEffect,
  needsApproval: typeof tool?.needsApproval === 'function' ? 'recheck' : tool?.needsApproval,
  idempotent: tool?.idempotent,
});
const names = ['lookup', 'refund', 'note', 'fail', 'boom', 'label', 'hang'];

describe('what each tool becomes', () => {
  it('untrusted (the default): every tool is a side effect that needs approval, whatever its annotations', async () => {
    const { client } = await orders();
    const tools = await mcpTools(client);
    expect(tools.map((t) => t.name)).toEqual(names);
    for (const tool of tools) {
      expect(gate(tool), tool.name).toEqual({ sideEffect: true, needsApproval: true, idempotent: false });
    }
  });

  it('trusted: readOnlyHint runs without approval; any other tool needs it; idempotentHint makes it idempotent', async () => {
    const { client } = await orders();
    const tools = byName(await mcpTools(client, { trust: true }));
    expect(gate(tools.get('lookup'))).toEqual({ sideEffect: false, needsApproval: 'recheck', idempotent: false });
    expect(gate(tools.get('refund'))).toEqual({ sideEffect: true, needsApproval: true, idempotent: true });
    // No annotations: the spec's defaults (not read-only, destructive).
    expect(gate(tools.get('note'))).toEqual({ sideEffect: true, needsApproval: true, idempotent: false });
    const norecheck = byName(await mcpTools(client, { trust: true, recheck: false }));
    expect(gate(norecheck.get('lookup'))).toEqual({ sideEffect: false, needsApproval: false, idempotent: false });
  });

  it("declares the server's description and JSON Schema as they are", async () => {
    const { client } = await orders();
    const { tools: listed } = await client.listTools();
    const declared = toolDeclarations(await mcpTools(client));
    const refund = listed.find((t) => t.name === 'refund');
    const { $schema: _dialect, ...schema } = (refund?.inputSchema ?? {}) as Record<string, unknown>;
    expect(declared.find((d) => d.name === 'refund')).toEqual({
      name: 'refund',
      description: 'Refund an order, in cents',
      parameters: schema,
    });
    expect(schema).toMatchObject({ type: 'object', required: ['order', 'cents'] });
  });

  it('puts the prefix before every name, and calls the tool by its own name', async () => {
    const { client, seen } = await orders();
    const tools = byName(await mcpTools(client, { prefix: 'crm_' }));
    expect([...tools.keys()]).toEqual(names.map((n) => `crm_${n}`));
    expect(await call(tools.get('crm_lookup'), { order: 'A-1' })).toBe('order A-1: shipped');
    expect(seen.map((s) => s.tool)).toEqual(['lookup']);
  });
});

describe('the call', () => {
  it(`passes the idempotency key in the call's _meta (${IDEMPOTENCY_KEY_META})`, async () => {
    const { client, seen } = await orders();
    const tools = byName(await mcpTools(client));
    await call(tools.get('refund'), { order: 'A-1', cents: 500 }, 'run-7:3.1');
    await call(tools.get('note'), { order: 'A-1', text: 'hi' }, 'run-7:4');
    expect(seen).toEqual([
      { tool: 'refund', key: 'run-7:3.1', args: { order: 'A-1', cents: 500 } },
      { tool: 'note', key: 'run-7:4', args: { order: 'A-1', text: 'hi' } },
    ]);
    expect(seen.map((s) => s.fence)).toEqual([undefined, undefined]); // no store: no fence
  });

  it(`passes the run's fencing token in the call's _meta (${FENCE_META}) when it has one`, async () => {
    const { client, seen } = await orders();
    const tools = byName(await mcpTools(client));
    await call(tools.get('refund'), { order: 'A-1', cents: 500 }, 'run-7:3', undefined, 7);
    expect(seen).toEqual([{ tool: 'refund', key: 'run-7:3', fence: 7, args: { order: 'A-1', cents: 500 } }]);
  });

  it('passes the abort signal: an aborted call rejects, and the server sees it cancelled', async () => {
    const { client, seen } = await orders();
    const tools = byName(await mcpTools(client));
    const abort = new AbortController();
    const pending = Promise.resolve(call(tools.get('hang'), { order: 'A-1' }, 'k', abort.signal));
    await expect.poll(() => seen.length).toBe(1);
    abort.abort(new Error('cancelled by the run'));
    await expect(pending).rejects.toThrow('cancelled by the run');
    await expect.poll(() => seen.at(-1)?.cancelled).toBe(true);
  });

  it("gives up after timeoutMs (also the tool's timeoutMs, which the run enforces)", async () => {
    const { client } = await orders();
    const tools = byName(await mcpTools(client, { timeoutMs: 50 }));
    expect(tools.get('hang')?.timeoutMs).toBe(50);
    await expect(call(tools.get('hang'), { order: 'A-1' })).rejects.toThrow(/timed out/i);
  });
});

describe('results', () => {
  it('structuredContent when there is one; else the text blocks joined; other blocks kept as data', async () => {
    const { client } = await orders();
    const tools = byName(await mcpTools(client));
    expect(await call(tools.get('refund'), { order: 'A-1', cents: 500 })).toEqual({ refunded: 500, order: 'A-1' });
    expect(await call(tools.get('lookup'), { order: 'A-1' })).toBe('order A-1: shipped');
    expect(await call(tools.get('note'), { order: 'A-1', text: 'x' })).toBe('');
    expect(await call(tools.get('label'), { order: 'A-1' })).toEqual({
      text: 'label of A-1\nprinted',
      content: [{ type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' }],
    });
  });

  it('isError, and a tool that throws on the server, throw McpToolError with the text', async () => {
    const { client } = await orders();
    const tools = byName(await mcpTools(client));
    const failed = Promise.resolve(call(tools.get('fail'), { order: 'A-9' }));
    await expect(failed).rejects.toBeInstanceOf(McpToolError);
    await expect(failed).rejects.toThrow('order A-9 not found');
    await expect(Promise.resolve(call(tools.get('boom'), { order: 'A-1' }))).rejects.toThrow('the database is down');
  });

  it('arguments the server refuses are an error, not a crash', async () => {
    const { client } = await orders();
    const tools = byName(await mcpTools(client));
    const refused = Promise.resolve(call(tools.get('refund'), { order: 'A-1', cents: 'lots' }));
    await expect(refused).rejects.toThrow(/cents/);
  });
});

describe('arguments', () => {
  const validate = (tool: Tool | undefined, value: unknown) => tool?.input?.['~standard'].validate(value);

  it('must be an object; with no validator, the server checks the rest', async () => {
    const { client } = await orders();
    const refund = byName(await mcpTools(client)).get('refund');
    expect(validate(refund, [1])).toEqual({ issues: [{ message: 'arguments must be an object, got an array' }] });
    expect(validate(refund, { cents: 'lots' })).toEqual({ value: { cents: 'lots' } });
  });

  it("are checked against the server's JSON Schema by the validator given", async () => {
    const { AjvJsonSchemaValidator } = await import('@modelcontextprotocol/sdk/validation/ajv');
    const { client } = await orders();
    const refund = byName(await mcpTools(client, { validator: new AjvJsonSchemaValidator() })).get('refund');
    expect(validate(refund, { order: 'A-1', cents: 5 })).toEqual({ value: { order: 'A-1', cents: 5 } });
    expect(validate(refund, { order: 'A-1', cents: 'lots' })).toMatchObject({
      issues: [{ message: expect.stringMatching(/cents/) }],
    });
  });
});

describe('options', () => {
  it('are checked up front: a typo, a bad prefix, a bad timeout, something that is not a client', async () => {
    const { client } = await orders();
    await expect(mcpTools(client, { trusted: true } as never)).rejects.toThrow(OptionsError);
    await expect(mcpTools(client, { trusted: true } as never)).rejects.toThrow(/trust/);
    await expect(mcpTools(client, { trust: 'yes' } as never)).rejects.toThrow(/trust must be true or false/);
    await expect(mcpTools(client, { prefix: 'a.b' })).rejects.toThrow(/prefix/);
    await expect(mcpTools(client, { timeoutMs: 0 })).rejects.toThrow(/timeoutMs/);
    await expect(mcpTools({} as never)).rejects.toThrow(/client must be a connected MCP Client/);
  });

  it('signal aborts the listing: a typed error, no tools', async () => {
    const { client } = await orders();
    const listing = mcpTools(client, { signal: AbortSignal.abort(new Error('shutting down')) });
    await expect(listing).rejects.toBeInstanceOf(McpToolsError);
    await expect(listing).rejects.toThrow(/tools\/list failed: .*shutting down/);
  });
});
