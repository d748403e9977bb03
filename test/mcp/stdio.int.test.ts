/**
 * The tools of a real MCP server in a child process, over stdio (`StdioClientTransport` spawning
 * test/mcp/stdio-server.ts): the gate as the trust decides it, the key arriving in `_meta` on the
 * server side, errors as observations, and a server killed in the middle of a call: an error
 * observation, not a hang.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Agent } from '../../src/index.js';
import { mcpTools } from '../../src/mcp/index.js';
import { scriptedPolicy } from '../../src/testing/index.js';
import type { Seen } from './servers.js';
import { outcomes } from './support.js';

const root = resolve(import.meta.dirname, '..', '..');
let dir = '';
let client: Client;
let transport: StdioClientTransport;

/** What the server process saw, from the file it appends to. */
function seen(): Seen[] {
  let text = '';
  try {
    text = readFileSync(join(dir, 'seen.jsonl'), 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Seen);
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-mcp-'));
  transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', 'test/mcp/stdio-server.ts', join(dir, 'seen.jsonl')],
    cwd: root,
    stderr: 'pipe',
  });
  client = new Client({ name: 'tollgate-test', version: '1.0.0' });
  await client.connect(transport);
}, 30_000);

afterEach(async () => {
  await client.close();
  rmSync(dir, { recursive: true, force: true });
});

const lookupA1 = scriptedPolicy([{ tool: 'lookup', args: { order: 'A-1' } }, { final: 'shipped' }]);

describe('an MCP server in a child process, over stdio', () => {
  it('untrusted: the read-only tool pauses for approval, then runs with the key in _meta', async () => {
    const agent = new Agent({ runId: 'stdio-1', tools: await mcpTools(client), policy: lookupA1 });
    expect(await agent.start('Where is A-1?')).toBe('awaiting_approval');
    expect(seen()).toEqual([]);
    expect(await agent.decide(true, 'ok')).toBe('done');
    expect(outcomes(agent.state.history)).toEqual([{ result: 'order A-1: shipped' }]);
    expect(seen()).toEqual([{ tool: 'lookup', key: 'stdio-1:1', args: { order: 'A-1' } }]);
  });

  it('trusted: the read-only tool runs without approval; the refund waits, then runs with its key', async () => {
    const policy = scriptedPolicy([
      { tool: 'lookup', args: { order: 'A-1' } },
      { tool: 'refund', args: { order: 'A-1', cents: 900 } },
      { final: 'refunded' },
    ]);
    const agent = new Agent({ runId: 'stdio-2', tools: await mcpTools(client, { trust: true }), policy });
    expect(await agent.start('Refund A-1 if shipped')).toBe('awaiting_approval');
    expect(agent.state.pending).toMatchObject({ tool: 'refund' });
    expect(await agent.decide(true, 'ok')).toBe('done');
    expect(outcomes(agent.state.history)).toEqual([
      { result: 'order A-1: shipped' },
      { result: { refunded: 900, order: 'A-1' } },
    ]);
    expect(seen().map((s) => [s.tool, s.key])).toEqual([
      ['lookup', 'stdio-2:1'],
      ['refund', 'stdio-2:2'],
    ]);
  });

  it('isError and a throwing tool are error observations', async () => {
    const policy = scriptedPolicy([
      { tool: 'fail', args: { order: 'A-9' } },
      { tool: 'boom', args: { order: 'A-1' } },
      { final: 'gave up' },
    ]);
    const agent = new Agent({ tools: await mcpTools(client, { trust: true }), policy });
    let status = await agent.start('go');
    while (status === 'awaiting_approval') status = await agent.decide(true, 'ok');
    expect(status).toBe('done');
    expect(outcomes(agent.state.history)).toEqual([
      { error: 'McpToolError: order A-9 not found' },
      { error: expect.stringMatching(/^McpToolError: .*the database is down/) },
    ]);
  });

  it('a tool that times out is cancelled on the server and recorded as a timeout', async () => {
    const policy = scriptedPolicy([{ tool: 'hang', args: { order: 'A-1' } }, { final: 'gave up' }]);
    const agent = new Agent({ tools: await mcpTools(client, { trust: true, timeoutMs: 300 }), policy });
    expect(await agent.start('go')).toBe('done');
    expect(outcomes(agent.state.history)).toEqual([{ error: expect.stringMatching(/^TimeoutError: /) }]);
    await expect.poll(() => seen().some((s) => s.tool === 'hang' && s.cancelled)).toBe(true);
  });

  it('the server process killed in the middle of a call: an error observation, not a hang', async () => {
    const policy = scriptedPolicy([{ tool: 'hang', args: { order: 'A-1' } }, { final: 'the server died' }]);
    const agent = new Agent({ tools: await mcpTools(client, { trust: true }), policy });
    const pid = transport.pid;
    expect(pid).toBeTypeOf('number');
    const run = agent.start('go');
    await expect.poll(() => seen().length).toBe(1);
    process.kill(pid as number, 'SIGKILL');
    expect(await run).toBe('done');
    expect(outcomes(agent.state.history)).toEqual([{ error: expect.stringMatching(/^McpError: .*Connection closed/) }]);
  }, 20_000);
});
