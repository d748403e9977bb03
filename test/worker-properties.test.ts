/**
 * Workers, the decision queue and kills, under random schedules (fast-check): runs submitted,
 * decisions recorded (some stale, some racing), two workers draining, the first one killed in
 * the middle of a call (before or after the effect), time passing (leases lapse, approvals
 * expire). Whatever the schedule, a side effect happens only for an approved call, at most once
 * per key, and every run ends with no decision left unapplied.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defineAgent, type Policy, type Tool } from '../src/index.js';
import { MemoryStore } from '../src/stores/memory.js';
import { ManualClock } from '../src/testing/index.js';
import { expireDue, recordDecision, submitRun, Worker } from '../src/worker/index.js';
import { mortal } from './support/helpers.js';

const SOAK = process.env.TOLLGATE_SOAK === '1';
const SEED = process.env.TOLLGATE_SEED ? Number(process.env.TOLLGATE_SEED) : SOAK ? Date.now() % 2 ** 31 : 20_261_203;
const RUNS = Number(process.env.TOLLGATE_RUNS ?? (SOAK ? 2_000 : 60));
const LEASE_MS = 10_000;
const TTL_MS = 60_000;

type Op =
  | { op: 'submit' }
  | { op: 'decide'; run: number; approve: boolean }
  | { op: 'drainA' }
  | { op: 'drainB' }
  | { op: 'armKill'; afterEffect: boolean }
  | { op: 'advance'; ms: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.constant({ op: 'submit' as const }), weight: 2 },
  {
    arbitrary: fc.record({ op: fc.constant('decide' as const), run: fc.nat(7), approve: fc.boolean() }),
    weight: 4,
  },
  { arbitrary: fc.constant({ op: 'drainA' as const }), weight: 3 },
  { arbitrary: fc.constant({ op: 'drainB' as const }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('armKill' as const), afterEffect: fc.boolean() }), weight: 1 },
  {
    arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.constantFrom(1_000, LEASE_MS + 1, TTL_MS + 1) }),
    weight: 1,
  },
);

const never = new Promise<never>(() => {});
const tick = () => new Promise((r) => setTimeout(r, 0));

async function play(ops: readonly Op[]) {
  const clock = new ManualClock(Date.parse('2030-01-01T00:00:00Z'));
  const store = new MemoryStore({ now: () => clock.now() });
  const effects: { key: string; approvedCallId: string | null }[] = [];
  const approved = new Set<string>();
  let kill: { afterEffect: boolean } | null = null;
  // Worker A reaches the store through a wrapper that a kill cuts; a killed A is replaced.
  let a = mortal(store);
  let dead = false;
  const effect = (key: string, ctx: { approvedCallId: string | null }) =>
    effects.push({ key, approvedCallId: ctx.approvedCallId });
  const policy: Policy = (history) => {
    const done = history.filter((e) => e.role === 'tool').length;
    return done >= 2 ? { final: 'end' } : { tool: 'pay', args: { n: done } };
  };
  const payFor = (killable: boolean): Tool => ({
    name: 'pay',
    sideEffect: true,
    fn: (_args, key, ctx) => {
      if (killable && kill) {
        const { afterEffect } = kill;
        kill = null;
        if (afterEffect) effect(key, ctx);
        dead = true;
        a.die();
        return never;
      }
      effect(key, ctx);
      return 'paid';
    },
  });
  const common = { name: 'payer', policy, clock, approvalTtlMs: TTL_MS };
  const forA = defineAgent({ ...common, tools: [payFor(true)] });
  const forB = defineAgent({ ...common, tools: [payFor(false)] });
  const workerA = () => new Worker({ store: a.store, agents: [forA], leaseMs: LEASE_MS, owner: 'a' });
  let runs = 0;
  for (const step of ops) {
    switch (step.op) {
      case 'submit':
        await submitRun(store, { agent: forB, goal: 'pay', runId: `r${runs++}` });
        break;
      case 'decide': {
        if (runs === 0) break;
        const runId = `r${step.run % runs}`;
        const record = await store.load(runId);
        const call = record?.pendingCalls[0];
        if (!call) break;
        try {
          await recordDecision(store, runId, { [call.id]: { approve: step.approve } }, { by: 'h', clock });
          if (step.approve) approved.add(call.id);
        } catch {
          // stale, expired, already decided, busy: refused, and nothing recorded
        }
        break;
      }
      case 'drainA': {
        if (dead) {
          a = mortal(store); // a new process in place of the killed one
          dead = false;
        }
        const drained = workerA().drain();
        // A killed worker's drain never ends: stop waiting once it is dead.
        for (let i = 0; i < 200 && !dead; i++) {
          if (await Promise.race([drained.then(() => true), tick().then(() => false)])) break;
        }
        break;
      }
      case 'drainB':
        await new Worker({ store, agents: [forB], leaseMs: LEASE_MS, owner: 'b' }).drain();
        break;
      case 'armKill':
        kill = { afterEffect: step.afterEffect };
        break;
      case 'advance':
        clock.advance(step.ms);
        break;
    }
  }
  // The end: time passes (every lease lapses, every approval expires) and B works everything.
  clock.advance(TTL_MS + LEASE_MS + 1);
  await expireDue(store, { agents: [forB], owner: 'b', leaseMs: LEASE_MS });
  await new Worker({ store, agents: [forB], leaseMs: LEASE_MS, owner: 'b' }).drain();
  return { store, effects, approved, runs };
}

describe('workers under random schedules', () => {
  it('effects only for approved calls, at most once per key; no decision left behind', async () => {
    let effectsSeen = 0;
    const property = fc.asyncProperty(fc.array(opArb, { minLength: 5, maxLength: 40 }), async (ops) => {
      const { store, effects, approved, runs } = await play(ops);
      effectsSeen += effects.length;
      const keys = effects.map((e) => e.key);
      expect(new Set(keys).size, `effects ${keys.join(' ')}`).toBe(keys.length);
      for (const e of effects) expect(e.approvedCallId !== null && approved.has(e.approvedCallId)).toBe(true);
      for (let i = 0; i < runs; i++) {
        const run = await store.load(`r${i}`);
        expect(run?.decision ?? null).toBeNull();
        expect(run?.status).not.toBe('running');
      }
      expect(await store.list({ status: 'awaiting_approval', expired: true })).toEqual([]);
    });
    const details = await fc.check(property, { seed: SEED, numRuns: RUNS });
    if (details.failed) {
      throw new Error(
        `fast-check failed: replay with TOLLGATE_SEED=${details.seed}\n${fc.defaultReportMessage(details)}\n${String(details.errorInstance)}`,
      );
    }
    expect(effectsSeen).toBeGreaterThan(0); // the schedules reach the tool
  }, 120_000);
});
