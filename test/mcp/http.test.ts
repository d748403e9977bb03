/**
 * Agent runs with the tools of a real MCP server (the SDK's `McpServer`) over Streamable HTTP on
 * loopback: the approval gate as the trust in the server decides it, the idempotency key arriving
 * in `_meta` on the server, errors as observations, and a trusted server whose tool changes after
 * it was listed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Agent } from '../../src/index.js';
import { mcpTools } from '../../src/mcp/index.js';
import { scriptedPolicy } from '../../src/testing/index.js';
import { ordersServer, type Seen } from './servers.js';
import { type Connected, outcomes, overHttp } from './support.js';

let connected: Connected | undefined;
afterEach(async () => {
  await connected?.close();
  connected = undefined;
});

async function orders() {
  const seen: Seen[] = [];
  const { server, lookup } = ordersServer((call) => seen.push(call));
  connected = await overHttp(server);
  return { client: connected.client, seen, lookup };
}

const lookupA1 = scriptedPolicy([{ tool: 'lookup', args: { order: 'A-1' } }, { final: 'shipped' }]);

describe('the approval gate, over Streamable HTTP', () => {
  it('an untrusted read-only tool pauses for approval; approved, it runs once with the key', async () => {
    const { client, seen } = await orders();
    const agent = new Agent({ runId: 'run-1', tools: await mcpTools(client), policy: lookupA1 });
    expect(await agent.start('Where is A-1?')).toBe('awaiting_approval');
    expect(agent.state.pending).toMatchObject({ tool: 'lookup', args: { order: 'A-1' } });
    expect(seen).toEqual([]);
    expect(await agent.decide(true, 'ok')).toBe('done');
    expect(outcomes(agent.state.history)).toEqual([{ result: 'order A-1: shipped' }]);
    expect(seen).toEqual([{ tool: 'lookup', key: 'run-1:1', args: { order: 'A-1' } }]);
  });

  it('a trusted read-only tool runs without approval', async () => {
    const { client, seen } = await orders();
    const agent = new Agent({ runId: 'run-2', tools: await mcpTools(client, { trust: true }), policy: lookupA1 });
    expect(await agent.start('Where is A-1?')).toBe('done');
    expect(outcomes(agent.state.history)).toEqual([{ result: 'order A-1: shipped' }]);
    expect(seen).toEqual([{ tool: 'lookup', key: 'run-2:1', args: { order: 'A-1' } }]);
  });

  it('a trusted side effect still waits for a human; its structured result is recorded', async () => {
    const { client, seen } = await orders();
    const policy = scriptedPolicy([{ tool: 'refund', args: { order: 'A-1', cents: 1200 } }, { final: 'refunded' }]);
    const agent = new Agent({ runId: 'run-3', tools: await mcpTools(client, { trust: true }), policy });
    expect(await agent.start('Refund A-1')).toBe('awaiting_approval');
    expect(seen).toEqual([]);
    expect(await agent.decide(true, 'ok')).toBe('done');
    expect(outcomes(agent.state.history)).toEqual([{ result: { refunded: 1200, order: 'A-1' } }]);
    expect(seen).toEqual([{ tool: 'refund', key: 'run-3:1', args: { order: 'A-1', cents: 1200 } }]);
  });

  it('a denied call never reaches the server', async () => {
    const { client, seen } = await orders();
    const agent = new Agent({ runId: 'run-4', tools: await mcpTools(client), policy: lookupA1 });
    await agent.start('Where is A-1?');
    expect(await agent.decide(false, 'no')).toBe('done');
    expect(outcomes(agent.state.history)).toEqual([{ error: 'denied by human: no' }]);
    expect(seen).toEqual([]);
  });
});

describe('a trusted server whose tool changes after it was listed', () => {
  it('a read-only tool that is no longer read-only needs approval', async () => {
    const { client, seen, lookup } = await orders();
    const tools = await mcpTools(client, { trust: true });
    lookup.update({ annotations: { readOnlyHint: false } });
    const agent = new Agent({ runId: 'run-5', tools, policy: lookupA1 });
    expect(await agent.start('Where is A-1?')).toBe('awaiting_approval');
    expect(seen).toEqual([]);
  });

  it('a read-only tool the server no longer lists needs approval', async () => {
    const { client, seen, lookup } = await orders();
    const tools = await mcpTools(client, { trust: true });
    lookup.remove();
    const agent = new Agent({ runId: 'run-6', tools, policy: lookupA1 });
    expect(await agent.start('Where is A-1?')).toBe('awaiting_approval');
    expect(seen).toEqual([]);
  });

  it('with recheck: false, the listing of mcpTools holds (the change is not seen)', async () => {
    const { client, seen, lookup } = await orders();
    const tools = await mcpTools(client, { trust: true, recheck: false });
    lookup.update({ annotations: { readOnlyHint: false } });
    const agent = new Agent({ runId: 'run-7', tools, policy: lookupA1 });
    expect(await agent.start('Where is A-1?')).toBe('done');
    expect(seen).toHaveLength(1);
  });
});

describe('errors are observations', () => {
  it('isError, a tool that throws on the server, and arguments the server refuses', async () => {
    const { client } = await orders();
    const policy = scriptedPolicy([
      { tool: 'fail', args: { order: 'A-9' } },
      { tool: 'boom', args: { order: 'A-1' } },
      { tool: 'refund', args: { order: 'A-1', cents: -5 } },
      { final: 'gave up' },
    ]);
    const agent = new Agent({ tools: await mcpTools(client, { trust: true }), policy });
    let status = await agent.start('go');
    while (status === 'awaiting_approval') status = await agent.decide(true, 'ok');
    expect(status).toBe('done');
    expect(outcomes(agent.state.history)).toEqual([
      { error: 'McpToolError: order A-9 not found' },
      { error: expect.stringMatching(/^McpToolError: .*the database is down/) },
      { error: expect.stringMatching(/^McpToolError: .*cents/) },
    ]);
  });
});
