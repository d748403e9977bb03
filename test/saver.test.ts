/**
 * The `Saver` (src/runtime/saver.ts) on the in-memory store, fed run views by hand: what it
 * writes and when it writes nothing, the lease it saves with, and what follows a failed save.
 * The same paths run through a live Agent in test/store-agent.test.ts and test/stores/leases.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { HistoryEntry } from '../machines/types.js';
import { decodeCheckpoint, decodeStored, entryOf, headOf, type PersistedRun } from '../src/checkpoint/index.js';
import { Agent, ConflictError, LeaseLostError } from '../src/index.js';
import { type RunView, Saver } from '../src/runtime/saver.js';
import type { Lease, RunWrite } from '../src/store/contract.js';
import { MemoryStore } from '../src/stores/memory.js';

/** A real persisted run (a fresh agent's, done), to build views from. */
async function persisted(): Promise<PersistedRun> {
  const agent = new Agent({ runId: 'r', policy: () => ({ final: 'ok' }), tools: [] });
  await agent.start('go');
  return decodeCheckpoint(agent.checkpoint());
}

function viewOf(run: PersistedRun, history: HistoryEntry[], steps = run.context.steps): RunView {
  return {
    run: { ...run, context: { ...run.context, steps, history } },
    status: 'done',
    pendingCalls: [],
    history,
  };
}

/** A memory store that records every write it is asked for. */
function recording(fail?: (n: number) => unknown) {
  const store = new MemoryStore();
  const save = store.save.bind(store);
  const writes: { write: RunWrite; expected: number; lease: Lease | undefined }[] = [];
  store.save = async (runId: string, write: RunWrite, expected: number, lease?: Lease) => {
    writes.push({ write, expected, lease });
    const error = fail?.(writes.length);
    if (error) throw error;
    return save(runId, write, expected, lease);
  };
  return { store, writes };
}

function saver(
  store: MemoryStore,
  read: () => RunView | null,
  options: {
    agent?: string | null;
    failures?: unknown[];
    leaseMs?: number;
    from?: { version: number; stored: number; head: string; base?: string | null };
  } = {},
) {
  return new Saver({
    store,
    runId: 'r',
    version: options.from?.version ?? 0,
    stored: options.from?.stored ?? 0,
    head: options.from?.head ?? null,
    base: options.from?.base ?? null,
    lease: { owner: 'me', leaseMs: options.leaseMs ?? 60_000, waitMs: 0 },
    claimed: null,
    agent: options.agent ?? null,
    read,
    onFailure: (error) => options.failures?.push(error),
  });
}

const goal: HistoryEntry = { role: 'user', content: 'go' };
const answer: HistoryEntry = { role: 'assistant', final: 'ok' };

describe('Saver', () => {
  it('writes the new entries and the head, and writes nothing when neither changed', async () => {
    const run = await persisted();
    const { store, writes } = recording();
    let view = viewOf(run, [goal]);
    const s = saver(store, () => view);
    expect(s.version).toBe(0);
    await s.flush();
    expect(s.version).toBe(1);
    expect(writes).toHaveLength(1);
    expect(writes[0]?.write).toMatchObject({ from: 0, append: [entryOf(goal)], status: 'done' });
    expect(writes[0]?.expected).toBe(0);
    await s.flush();
    await s.flush();
    expect(writes).toHaveLength(1); // nothing changed: no write
    view = viewOf(run, [goal, answer]);
    await s.flush();
    expect(writes).toHaveLength(2);
    expect(writes[1]?.write).toMatchObject({ from: 1, append: [entryOf(answer)] });
    expect(writes[1]?.expected).toBe(1);
    // The head alone changed (same history): written, with no entries.
    view = viewOf(run, [goal, answer], run.context.steps + 1);
    await s.flush();
    expect(writes).toHaveLength(3);
    expect(writes[2]?.write).toMatchObject({ from: 2, append: [] });
    expect(writes[2]?.write.head).not.toBe(writes[1]?.write.head);
    expect((await store.load('r'))?.version).toBe(3);
  });

  it('writes once when touched even if nothing changed, then no more', async () => {
    const run = await persisted();
    const { store, writes } = recording();
    const s = saver(store, () => viewOf(run, [goal]));
    await s.flush();
    s.touch();
    await s.flush();
    expect(writes).toHaveLength(2);
    expect(writes[1]?.write).toMatchObject({ from: 1, append: [] });
    await s.flush();
    expect(writes).toHaveLength(2);
  });

  it('writes nothing for a run that has no view (its actor stopped)', async () => {
    const { store, writes } = recording();
    const s = saver(store, () => null);
    s.touch();
    await s.flush();
    expect(writes).toEqual([]);
    expect(s.lease).toBeNull(); // nothing claimed either
  });

  it('saves under its lease, claimed at the first save; names the agent only when it has one', async () => {
    const run = await persisted();
    const { store, writes } = recording();
    const s = saver(store, () => viewOf(run, [goal]), { agent: 'helper' });
    expect(s.lease).toBeNull();
    await s.flush();
    expect(s.lease).toMatchObject({ runId: 'r', owner: 'me' });
    expect(writes[0]?.lease).toBe(s.lease);
    expect(writes[0]?.write.agent).toBe('helper');
    const other = recording();
    await saver(other.store, () => viewOf(run, [goal])).flush();
    expect('agent' in (other.writes[0]?.write ?? {})).toBe(false);
    await s.release();
  });

  it('release saves what is left, then gives the run up; releaseOnly gives it up without saving', async () => {
    const run = await persisted();
    const { store, writes } = recording();
    let view = viewOf(run, [goal]);
    const s = saver(store, () => view);
    await s.flush();
    view = viewOf(run, [goal, answer]);
    await s.release();
    expect(writes).toHaveLength(2);
    expect(s.lease).toBeNull();
    await expect(store.claim('r', { owner: 'other', leaseMs: 1_000 })).resolves.toMatchObject({ owner: 'other' });

    const second = recording();
    let view2 = viewOf(run, [goal]);
    const t = saver(second.store, () => view2);
    await t.flush();
    view2 = viewOf(run, [goal, answer]);
    await t.releaseOnly();
    expect(second.writes).toHaveLength(1); // the change is not saved
    await expect(second.store.claim('r', { owner: 'other', leaseMs: 1_000 })).resolves.toMatchObject({
      owner: 'other',
    });
  });

  it('after a failed save: the failure is reported once, the lease is given up first, and every later save fails without writing', async () => {
    const run = await persisted();
    const conflict = new ConflictError('someone else wrote', 1, 2, { runId: 'r' });
    const { store, writes } = recording((n) => (n === 2 ? conflict : undefined));
    const release = store.release.bind(store);
    let released = false;
    store.release = async (lease: Lease) => {
      await new Promise((r) => setTimeout(r, 30));
      released = true;
      return release(lease);
    };
    const failures: unknown[] = [];
    let view = viewOf(run, [goal]);
    const s = saver(store, () => view, { failures });
    await s.flush();
    view = viewOf(run, [goal, answer]);
    await expect(s.flush()).rejects.toBe(conflict);
    expect(released).toBe(true); // the rejection came after the release
    expect(failures).toEqual([conflict]);
    await s.givenUp();
    expect(s.lease).toBeNull();
    s.touch();
    await expect(s.flush()).rejects.toBe(conflict);
    expect(writes).toHaveLength(2);
    expect(failures).toHaveLength(1);
    expect(s.version).toBe(1);
    await expect(s.release()).resolves.toBeUndefined(); // never throws
  });

  it('givenUp resolves at once while no save failed', async () => {
    const { store } = recording();
    const s = saver(store, () => null);
    let done = false;
    void s.givenUp().then(() => {
      done = true;
    });
    await Promise.resolve();
    expect(done).toBe(true);
  });

  it('a run loaded from the store is not written again until it changes', async () => {
    const run = await persisted();
    const { store, writes } = recording();
    const view = viewOf(run, [goal]);
    await saver(store, () => view).flush();
    const loaded = saver(store, () => view, { from: { version: 1, stored: 1, head: headOf(view.run) } });
    await loaded.flush();
    expect(writes).toHaveLength(1);
    expect(loaded.version).toBe(1);
  });

  it('a lease lost while it works is reported as a failure of the run', async () => {
    const run = await persisted();
    const { store } = recording();
    const failures: unknown[] = [];
    const s = saver(store, () => viewOf(run, [goal]), { failures, leaseMs: 60 });
    await s.flush();
    const lease = s.lease as Lease;
    await store.release(lease);
    await store.claim('r', { owner: 'thief', leaseMs: 60_000 });
    for (let i = 0; i < 100 && failures.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(failures).toHaveLength(1);
    expect(failures[0]).toBeInstanceOf(LeaseLostError);
    expect(s.lease).toBeNull();
  });
  it('a loaded run whose head is a delta: not written again until it changes, then a delta against the same base', async () => {
    const run = await persisted();
    const { store, writes } = recording();
    let view = viewOf(run, [goal], 1);
    await saver(store, () => view).flush();
    view = viewOf(run, [goal], 2);
    const first = saver(store, () => view, {
      from: { version: 1, stored: 1, head: headOf(viewOf(run, [goal], 1).run) },
    });
    await first.flush(); // a new writer: a new base, stamped 2
    const record = await store.load('r');
    expect(record?.head).toBe('{"b":2}');
    const loaded = saver(store, () => view, {
      from: { version: 2, stored: 1, head: record?.head as string, base: record?.base as string },
    });
    await loaded.flush();
    expect(writes).toHaveLength(2);
    view = viewOf(run, [goal], 3);
    await loaded.flush();
    expect(writes[2]?.write).not.toHaveProperty('base');
    expect(writes[2]?.write.head).toBe('{"b":2,"c":{"steps":3}}');
  });
});

describe('Saver with a store that keeps bases', () => {
  it('writes a base with an empty delta first, then deltas that join into each run it saved', async () => {
    const run = await persisted();
    const { store, writes } = recording();
    let view = viewOf(run, [goal], 1);
    const s = saver(store, () => view);
    await s.flush();
    expect(writes[0]?.write.head).toBe('{"b":1}');
    expect(JSON.parse(writes[0]?.write.base as string)).toEqual({ b: 1, ...JSON.parse(headOf(view.run)) });
    for (let steps = 2; steps <= 4; steps++) {
      view = viewOf(run, steps === 4 ? [goal, answer] : [goal], steps);
      await s.flush();
      const { write } = writes.at(-1) as { write: RunWrite };
      expect(write).not.toHaveProperty('base');
      expect(write.head).toBe(`{"b":1,"c":{"steps":${steps}}}`);
      const record = await store.load('r');
      expect(decodeStored(record?.head as string, record?.entries ?? [], record?.base)).toEqual(
        decodeStored(headOf(view.run), view.history.map(entryOf)),
      );
    }
    expect(writes).toHaveLength(4);
  });

  it('a delta past half the head is not written: the save writes a new base, stamped with its version', async () => {
    const run = await persisted();
    const { store, writes } = recording();
    let view = viewOf(run, [goal]);
    const s = saver(store, () => view);
    await s.flush();
    const head = headOf(view.run);
    // An answer as long as the head: the delta would be longer than half of it.
    const changed = { ...view.run, context: { ...view.run.context, answer: 'x'.repeat(head.length) } };
    view = { ...view, run: changed };
    await s.flush();
    expect(writes[1]?.write.head).toBe('{"b":2}');
    expect(JSON.parse(writes[1]?.write.base as string)).toMatchObject({ b: 2 });
    view = { ...view, run: { ...changed, context: { ...changed.context, steps: 9 } } };
    await s.flush();
    expect(writes[2]?.write.head).toBe('{"b":2,"c":{"steps":9}}');
    const record = await store.load('r');
    expect(decodeStored(record?.head as string, record?.entries ?? [], record?.base).context.answer).toBe(
      changed.context.answer,
    );
  });

  it('a store that keeps no bases is given whole heads and no base', async () => {
    const run = await persisted();
    const { store, writes } = recording();
    Object.defineProperty(store, 'keepsBase', { value: false });
    let view = viewOf(run, [goal], 1);
    const s = saver(store, () => view);
    await s.flush();
    view = viewOf(run, [goal], 2);
    await s.flush();
    expect(writes.map((w) => w.write.head)).toEqual([headOf(viewOf(run, [goal], 1).run), headOf(view.run)]);
    expect(writes.every((w) => !('base' in w.write))).toBe(true);
  });
});
