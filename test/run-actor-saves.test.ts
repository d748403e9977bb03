/**
 * When the run actor saves outside a settle (src/runtime/run-actor.ts `save`): a change of
 * limits on a working run keeps its lease, and a save that changes nothing writes nothing.
 */
import { describe, expect, it } from 'vitest';
import { Agent, RunBusyError } from '../src/index.js';
import { viewOf } from '../src/runtime/run-actor.js';
import { MemoryStore } from '../src/stores/memory.js';
import { gate, recorder, sequence, until, wholeHead } from './support/helpers.js';

/** A memory store that counts its writes, and keeps each one's `relaxed` flag. */
function counting() {
  const store = new MemoryStore();
  const save = store.save.bind(store);
  const seen = { saves: 0, relaxed: [] as boolean[] };
  store.save = (...args: Parameters<MemoryStore['save']>) => {
    seen.saves++;
    seen.relaxed.push(args[1].relaxed === true);
    return save(...args);
  };
  return { store, seen };
}

describe('the run actor’s saves between settles', () => {
  it('extendBudget on a run at work saves the new limits and keeps the lease: no other owner may take the run', async () => {
    const { store } = counting();
    const held = gate<string>();
    let started = false;
    const agent = new Agent({
      runId: 'r',
      store,
      maxSteps: 5,
      policy: sequence({ tool: 'slow' }, { final: 'ok' }),
      tools: [
        {
          name: 'slow',
          fn: () => {
            started = true;
            return held.promise;
          },
        },
      ],
    });
    const done = agent.start('go');
    await until(() => started);
    const before = agent.version ?? 0;
    agent.extendBudget({ maxSteps: 9 });
    await until(() => (agent.version ?? 0) > before);
    expect(wholeHead(await store.load('r'))).toContain('"maxSteps":9');
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    await expect(store.claim('r', { owner: 'other', leaseMs: 1_000 })).rejects.toBeInstanceOf(RunBusyError);
    const stored = await store.load('r');
    expect(stored?.status).toBe('running');
    held.resolve('done');
    expect(await done).toBe('done');
    expect(agent.state.limits.maxSteps).toBe(9);
  });

  it('extendBudget to the limits a run at rest already has writes nothing', async () => {
    const { store, seen } = counting();
    const agent = new Agent({
      runId: 'r',
      store,
      maxSteps: 5,
      policy: sequence({ tool: 'mail' }),
      tools: [recorder('mail', { sideEffect: true }).tool],
    });
    expect(await agent.start('go')).toBe('awaiting_approval');
    const saves = seen.saves;
    const version = agent.version;
    agent.extendBudget({ maxSteps: 5 });
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect(seen.saves).toBe(saves);
    expect(agent.version).toBe(version);
    agent.extendBudget({ maxSteps: 6 });
    await until(() => seen.saves > saves);
    expect((await store.load('r'))?.version).toBe((version ?? 0) + 1);
  });

  it('a failed or stopped actor has nothing to save: its last snapshot is not the run', () => {
    const context = { history: [], calls: [] };
    const snapshot = (status: string) =>
      ({ status, value: 'done', context }) as unknown as Parameters<typeof viewOf>[0];
    expect(viewOf(snapshot('error'))).toBeNull();
    expect(viewOf(snapshot('stopped'))).toBeNull();
    expect(viewOf(snapshot('done'))).toMatchObject({ status: 'done', pendingCalls: [], history: [] });
    expect(viewOf(snapshot('active'))).toMatchObject({ status: 'done', run: { status: 'active', value: 'done' } });
  });
});

describe('the durable points of a step', () => {
  /** A run of `steps` calls of `tool`, then an answer; what the store held while each call ran. */
  async function stepsOf(tool: { sideEffect?: boolean; needsApproval?: boolean }, steps: number) {
    const { store, seen } = counting();
    const heads: string[] = [];
    const agent = new Agent({
      runId: 'r',
      store,
      maxSteps: steps + 1,
      policy: sequence(...Array.from({ length: steps }, (_, i) => ({ tool: 'look', args: { i } })), { final: 'ok' }),
      tools: [
        {
          name: 'look',
          ...tool,
          fn: async () => {
            heads.push(wholeHead(await store.load('r')));
            return 'seen';
          },
        },
      ],
    });
    expect(await agent.start('go')).toBe('done');
    return { saves: seen.saves, heads };
  }

  it('a pure call is saved with its result: one save per policy call, and one at the end', async () => {
    const { saves, heads } = await stepsOf({}, 5);
    expect(saves).toBe(6 + 1);
    // While it ran, the store held the run as it was before its policy call: no call in flight.
    for (const head of heads) expect(head).not.toContain('"state":"running"');
  });

  it('a side effect is saved before it is made, in flight', async () => {
    const { saves, heads } = await stepsOf({ sideEffect: true, needsApproval: false }, 5);
    expect(saves).toBe(6 + 5 + 1);
    for (const [i, head] of heads.entries()) {
      expect(head).toContain('"state":"running"');
      expect(head).toContain(`"args":{"i":${i}}`);
    }
  });
});

describe('durability: points', () => {
  /** Each save's `relaxed` flag, for a run of two pure steps, then a side effect, then a pause for approval. */
  async function flags(durability: 'full' | 'points' | undefined) {
    const { store, seen } = counting();
    const agent = new Agent({
      runId: 'r',
      store,
      ...(durability === undefined ? {} : { durability }),
      policy: sequence({ tool: 'look' }, { tool: 'look' }, { tool: 'note' }, { tool: 'mail' }),
      tools: [
        recorder('look').tool,
        recorder('note', { sideEffect: true, needsApproval: false }).tool,
        recorder('mail', { sideEffect: true }).tool,
      ],
    });
    expect(await agent.start('go')).toBe('awaiting_approval');
    return seen.relaxed;
  }

  it('relaxes only the saves before policy calls; a side effect’s record and the pause are durable', async () => {
    // policy 1, policy 2, policy 3, note’s write-ahead, policy 4, the pause.
    expect(await flags('points')).toEqual([true, true, true, false, true, false]);
  });

  it('makes every save durable by default and with full', async () => {
    expect(await flags(undefined)).toEqual([false, false, false, false, false, false]);
    expect(await flags('full')).toEqual([false, false, false, false, false, false]);
  });

  it('writes a relaxed run again when a point follows with nothing new, so the point is durable', async () => {
    const { store, seen } = counting();
    const held = gate<string>();
    let asked = false;
    const agent = new Agent({
      runId: 'r',
      store,
      durability: 'points',
      maxSteps: 5,
      policy: () => {
        asked = true;
        return held.promise.then(() => ({ final: 'ok' }));
      },
      tools: [],
    });
    const done = agent.start('go');
    await until(() => asked);
    // The limits did not change: nothing new to write, but the relaxed save must become durable.
    agent.extendBudget({ maxSteps: 5 });
    await until(() => seen.saves === 2);
    expect(seen.relaxed).toEqual([true, false]);
    held.resolve('');
    expect(await done).toBe('done');
  });

  it('is refused when it is neither full nor points', () => {
    expect(() => new Agent({ policy: sequence(), tools: [], durability: 'some' as never })).toThrow(
      /durability.*"full" or "points"/,
    );
  });
});
