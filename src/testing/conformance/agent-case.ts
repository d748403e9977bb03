/** A real Agent on the store: start, wait for a human, load elsewhere, decide, finish. */
import assert from 'node:assert/strict';
import { Agent } from '../../agent.js';
import { joinRun } from '../../store/contract.js';
import type { Tool } from '../../types.js';
import { scriptedPolicy } from '../scripted-policy.js';
import { conflict, withStore } from './fixtures.js';
import type { ConformanceCase } from './types.js';

export const agentCases: ConformanceCase[] = [
  {
    name: 'an Agent runs on the store: start → awaiting_approval → Agent.load → decide → done; the stale agent conflicts',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const sent: string[] = [];
        const tools: Tool[] = [
          { name: 'lookup', fn: () => ({ policy: 'refunds within 30 days — 返金 ✓' }) },
          { name: 'email', sideEffect: true, fn: (_args, key) => sent.push(key) },
        ];
        const policy = scriptedPolicy([
          { tool: 'lookup', args: { topic: 'refunds' } },
          { tool: 'email', args: { to: 'ops@example.com' } },
          { final: 'sent' },
        ]);
        const first = new Agent({ runId: 'agent-run', store, policy, tools });
        assert.equal(await first.start('email ops the refund policy'), 'awaiting_approval');

        const stored = await store.load('agent-run');
        assert.equal(stored?.version, first.version);
        assert.equal(stored?.status, 'awaiting_approval');
        assert.equal(joinRun(stored.head, stored.entries, stored.base), first.checkpoint());
        const inbox = await store.list({ status: 'awaiting_approval' });
        assert.deepEqual(
          inbox.map((r) => [r.runId, r.version]),
          [['agent-run', first.version]],
        );
        assert.deepEqual(inbox[0]?.pending, first.state.pending);

        const second = await Agent.load(store, 'agent-run', { policy, tools });
        assert.equal(second.checkpoint(), first.checkpoint());
        const callId = inbox[0]?.pending?.id;
        assert.equal(await second.decide(true, 'approved from the inbox', { callId, by: 'dana' }), 'done');
        assert.deepEqual(sent, ['agent-run:2']);

        const done = await store.load('agent-run');
        assert.equal(done?.status, 'done');
        assert.equal(done?.version, second.version);
        assert.equal(joinRun(done.head, done.entries, done.base), second.checkpoint());
        assert.deepEqual(await store.list({ status: 'awaiting_approval' }), []);

        // The first agent read an older version: its decision conflicts and runs nothing.
        await assert.rejects(first.decide(true), conflict('agent-run', stored.version, done.version));
        assert.deepEqual(sent, ['agent-run:2']);
      }),
  },
];
