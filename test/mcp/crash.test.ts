/**
 * A crash in the middle of an MCP call: the run is resumed from the checkpoint taken while the
 * call was in flight (its write-ahead record). A trusted server's `idempotentHint` tool is called
 * again with the same key in `_meta`, so the server can deduplicate; any other side effect goes
 * back to a human, and is not called again.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Agent, type Policy } from '../../src/index.js';
import { mcpTools } from '../../src/mcp/index.js';
import { scriptedPolicy } from '../../src/testing/index.js';
import { ordersServer, type Seen } from './servers.js';
import { type Connected, inMemory, outcomes } from './support.js';

let connected: Connected | undefined;
let stuck: Agent | undefined;
afterEach(async () => {
  await stuck?.cancel();
  await connected?.close();
  connected = stuck = undefined;
});

/** Runs `policy`'s call to the approval, approves it, and returns the checkpoint taken in the call. */
async function crashInCall(policy: Policy, trust: boolean) {
  const seen: Seen[] = [];
  // The first call never answers (the process "dies" in it); later ones answer at once.
  const hold = () => (seen.length === 1 ? new Promise<void>(() => {}) : Promise.resolve());
  connected = await inMemory(ordersServer((call) => seen.push(call), hold).server);
  const tools = await mcpTools(connected.client, { trust });
  stuck = new Agent({ runId: 'crash-1', tools, policy });
  expect(await stuck.start('go')).toBe('awaiting_approval');
  void stuck.decide(true, 'ok');
  await expect.poll(() => seen.length).toBe(1);
  return { blob: stuck.checkpoint(), tools, seen };
}

describe('a crash in the middle of an MCP call', () => {
  it('a trusted idempotent tool is called again, with the same key in _meta', async () => {
    const policy = scriptedPolicy([{ tool: 'refund', args: { order: 'A-1', cents: 700 } }, { final: 'refunded' }]);
    const { blob, tools, seen } = await crashInCall(policy, true);
    const again = Agent.resume(blob, { policy, tools });
    expect(await again.run()).toBe('done');
    expect(outcomes(again.state.history)).toEqual([{ result: { refunded: 700, order: 'A-1' } }]);
    expect(seen.map((s) => [s.tool, s.key])).toEqual([
      ['refund', 'crash-1:1'],
      ['refund', 'crash-1:1'],
    ]);
  });

  it('a tool that is not idempotent (or any tool of an untrusted server) goes back to a human', async () => {
    for (const [tool, args, trust] of [
      ['note', { order: 'A-1', text: 'called' }, true],
      ['refund', { order: 'A-1', cents: 700 }, false],
    ] as const) {
      const policy = scriptedPolicy([{ tool, args }, { final: 'noted' }]);
      const { blob, tools, seen } = await crashInCall(policy, trust);
      const again = Agent.resume(blob, { policy, tools });
      expect(await again.run(), tool).toBe('awaiting_approval');
      expect(again.state.pending, tool).toMatchObject({ tool, key: 'crash-1:1', outcome: 'unknown' });
      expect(seen, tool).toHaveLength(1);
      await stuck?.cancel();
      await connected?.close();
      connected = stuck = undefined;
    }
  });
});
