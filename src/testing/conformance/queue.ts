/** Agent names on runs, and the approval queue: `queueDecision` records a decision for a worker. */
import assert from 'node:assert/strict';
import type { RecordedDecision } from '../../store/contract.js';
import {
  busy,
  conflict,
  entries,
  nextMillisecond,
  optionsError,
  pendingCall,
  withClock,
  withStore,
  write,
} from './fixtures.js';
import type { ConformanceCase } from './types.js';

/** A decision on the first pending call of `runId` (step 1), as an approver records it. */
export function decisionOn(runId: string, by = 'alice'): RecordedDecision {
  return {
    decisions: { [`${runId}:1#1`]: { approve: true, note: 'ok — 了解', args: { to: 'ops' } } },
    by,
    at: '2026-05-06T07:08:09.010Z',
  };
}

/** A run of `agent` awaiting approval of one call (version 1, one entry). */
export const awaiting = (runId: string, agent = 'refunds') =>
  write({ status: 'awaiting_approval', append: entries(1), pendingCalls: [pendingCall(runId, 1)], agent });

/** Checks a rejection is the error named `name` about `runId` (and with `status`, when given). */
function named(name: string, runId: string, status?: string) {
  return (error: unknown): true => {
    const e = error as { name?: unknown; runId?: unknown; status?: unknown };
    assert.equal(e?.name, name, `expected a ${name}, got ${String(error)}`);
    assert.equal(e.runId, runId);
    if (status !== undefined) assert.equal(e.status, status);
    return true;
  };
}

export const queueCases: ConformanceCase[] = [
  {
    name: 'agent: the first save that names one sets it, saves without one keep it, another name is refused (OptionsError) and nothing changes',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        assert.equal(await store.save('r', write({ append: entries(1) }), 0), 1);
        assert.equal((await store.load('r'))?.agent, null);
        assert.equal(await store.save('r', write({ from: 1, agent: 'refunds' }), 1), 2);
        assert.equal((await store.load('r'))?.agent, 'refunds');
        assert.equal(await store.save('r', write({ from: 1, head: '{"n":3}' }), 2), 3);
        assert.equal((await store.load('r'))?.agent, 'refunds', 'a save without a name keeps the stored one');
        const before = await store.load('r');
        // With entries to append: a refused save appends none of them.
        await assert.rejects(
          store.save('r', write({ from: 1, agent: 'billing', append: entries(2, 1) }), 3),
          optionsError(/^save: run "r" belongs to agent "refunds"; a save cannot move it to "billing"/),
        );
        assert.deepEqual(await store.load('r'), before);
        assert.equal(await store.save('r', write({ from: 1, agent: 'refunds' }), 3), 4);
        // A run named from its first save; list shows the names too.
        assert.equal(await store.save('s', write({ agent: 'billing ✓' }), 0), 1);
        const listed = await store.list();
        assert.deepEqual(
          listed.map((r) => [r.runId, r.agent, r.decision]),
          [
            ['r', 'refunds', null],
            ['s', 'billing ✓', null],
          ],
        );
        for (const agent of ['', 'x'.repeat(257), 7, 'lone \ud800']) {
          await assert.rejects(store.save('t', write({ agent } as never), 0), optionsError(/^save: the agent name/));
        }
        assert.equal(await store.load('t'), null);
      }),
  },
  {
    name: 'list({ agent }) gives only that agent’s runs, with the other filters, oldest update first; a bad name is an OptionsError',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        await store.save('a1', write({ agent: 'a' }), 0);
        await nextMillisecond();
        await store.save('b1', write({ agent: 'b' }), 0);
        await nextMillisecond();
        await store.save('none', write(), 0);
        await nextMillisecond();
        await store.save('a2', awaiting('a2', 'a'), 0);
        const ids = async (o: object) => (await store.list(o)).map((r) => r.runId);
        assert.deepEqual(await ids({ agent: 'a' }), ['a1', 'a2']);
        assert.deepEqual(await ids({ agent: 'b' }), ['b1']);
        assert.deepEqual(await ids({ agent: 'c' }), []);
        assert.deepEqual(await ids({ agent: 'a', status: 'awaiting_approval' }), ['a2']);
        assert.deepEqual(await ids({ agent: 'a', limit: 1 }), ['a1']);
        assert.deepEqual(await ids({ agent: 'a', expired: false }), ['a1', 'a2']);
        await assert.rejects(store.list({ agent: '' }), optionsError(/^list: the agent name/));
      }),
  },
  {
    name: 'queueDecision records a decision: version + 1, same head, entries and pending calls; load and list show it; the next save clears it',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        await store.save('r', awaiting('r'), 0);
        const before = await store.load('r');
        const decision = decisionOn('r');
        assert.equal(await store.queueDecision('r', decision, 1), 2);
        const after = await store.load('r');
        assert.deepEqual(after?.decision, decision);
        const { version, decision: _d, updatedAt: _u, ...rest } = after as NonNullable<typeof after>;
        const { version: _v, decision: none, updatedAt: _b, ...restBefore } = before as NonNullable<typeof before>;
        assert.equal(version, 2);
        assert.equal(none, null);
        assert.deepEqual(rest, restBefore, 'head, entries, status, agent and pending calls are kept');
        const [listed] = await store.list({ agent: 'refunds' });
        assert.deepEqual([listed?.version, listed?.decision], [2, decision]);
        // The agent that read version 1 can no longer save over it unseen.
        await assert.rejects(store.save('r', write({ from: 1 }), 1), conflict('r', 1, 2));
        // The worker that applies it saves: the decision is gone.
        assert.equal(await store.save('r', write({ from: 1, append: entries(1, 1) }), 2), 3);
        const applied = await store.load('r');
        assert.deepEqual([applied?.decision, applied?.agent, applied?.entries.length], [null, 'refunds', 2]);
      }),
  },
  {
    name: 'queueDecision refuses: no run (RunNotFoundError), another version (ConflictError), not awaiting approval (RunStateError), a decision already there (ConflictError); nothing changes',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        await assert.rejects(store.queueDecision('ghost', decisionOn('ghost'), 1), named('RunNotFoundError', 'ghost'));
        await store.save('r', awaiting('r'), 0);
        await store.save('done', write({ status: 'done', agent: 'refunds' }), 0);
        await store.save('running', write({ agent: 'refunds' }), 0);
        await assert.rejects(store.queueDecision('r', decisionOn('r'), 2), conflict('r', 2, 1));
        await assert.rejects(
          store.queueDecision('done', decisionOn('done'), 1),
          named('RunStateError', 'done', 'done'),
        );
        await assert.rejects(
          store.queueDecision('running', decisionOn('running'), 1),
          named('RunStateError', 'running', 'running'),
        );
        const untouched = [await store.load('r'), await store.load('done'), await store.load('running')];
        assert.deepEqual(
          untouched.map((r) => [r?.version, r?.decision]),
          [
            [1, null],
            [1, null],
            [1, null],
          ],
        );
        assert.equal(await store.queueDecision('r', decisionOn('r', 'alice'), 1), 2);
        const first = await store.load('r');
        // The first decider wins: a second decision at the new version is a conflict too.
        await assert.rejects(store.queueDecision('r', decisionOn('r', 'bob'), 2), conflict('r', 2, 2));
        await assert.rejects(store.queueDecision('r', decisionOn('r', 'bob'), 1), conflict('r', 1, 2));
        assert.deepEqual(await store.load('r'), first);
        assert.equal(first?.decision?.by, 'alice');
      }),
  },
  {
    name: 'queueDecision while an owner holds a live lease: RunBusyError naming it; once released, or lapsed on the store’s clock, it records',
    requires: ['clock'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const t = clock.now;
        const lease = await store.claim('r', { owner: 'worker-a', leaseMs: 1_000 });
        await store.save('r', awaiting('r'), 0, lease);
        await assert.rejects(store.queueDecision('r', decisionOn('r'), 1), busy('r', 'worker-a', t + 1_000));
        assert.equal((await store.load('r'))?.decision, null);
        assert.equal(await store.release(lease), true);
        assert.equal(await store.queueDecision('r', decisionOn('r'), 1), 2);

        const other = await store.claim('s', { owner: 'worker-b', leaseMs: 1_000 });
        await store.save('s', awaiting('s'), 0, other);
        clock.now += 999;
        await assert.rejects(store.queueDecision('s', decisionOn('s'), 1), busy('s', 'worker-b'));
        clock.now += 1; // lapsed: a worker that died mid-run does not block the approver
        assert.equal(await store.queueDecision('s', decisionOn('s'), 1), 2);
        assert.equal((await store.load('s'))?.updatedAt, new Date(clock.now).toISOString());
        // The lapsed holder's lease is still current (nobody claimed): its save goes through and clears the decision.
        assert.equal(await store.save('s', write({ from: 1, status: 'done' }), 2, other), 3);
        assert.equal((await store.load('s'))?.decision, null);
      }),
  },
  {
    name: 'queueDecision checks its arguments up front: a bad run id, version or decision is an OptionsError, and nothing changes',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        await store.save('r', awaiting('r'), 0);
        const before = await store.load('r');
        const good = decisionOn('r');
        const bad: [unknown, unknown, RegExp][] = [
          ['r', 0, /^queueDecision: expectedVersion must be a whole number ≥ 1/],
          ['r', 1.5, /^queueDecision: expectedVersion/],
          ['a\u0000', 1, /^queueDecision: run id/],
        ];
        for (const [runId, version, pattern] of bad) {
          await assert.rejects(store.queueDecision(runId as string, good, version as number), optionsError(pattern));
        }
        const decisions: [unknown, RegExp][] = [
          [null, /the decision must be an object/],
          [{ ...good, extra: 1 }, /unknown decision field "extra"/],
          [{ ...good, decisions: [] }, /decision\.decisions must be an object/],
          [{ ...good, decisions: {} }, /must decide at least one call/],
          [{ ...good, by: 7 }, /decision\.by must be a string/],
          [{ ...good, at: 'yesterday' }, /decision\.at must be an ISO-8601 time/],
        ];
        for (const [decision, pattern] of decisions) {
          await assert.rejects(store.queueDecision('r', decision as RecordedDecision, 1), optionsError(pattern));
        }
        assert.deepEqual(await store.load('r'), before);
      }),
  },
];
