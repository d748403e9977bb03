/** Two OS processes racing saves on one run, and claims on many: optimistic concurrency and leases, for real. */
import assert from 'node:assert/strict';
import { withStore, write } from './fixtures.js';
import type { ClaimNextRaceReport, ClaimRaceReport, ConformanceCase, SaveRaceReport, WriterProcess } from './types.js';

const SAVES = 30;
const ENTRIES_PER_SAVE = 2;
const CLAIMED_RUNS = 30;

/** Starts `writers`, lets them go together, and collects their reports; kills them whatever happens. */
async function raceAll(writers: WriterProcess[]) {
  try {
    await Promise.all(writers.map((w) => w.ready));
    for (const w of writers) w.go();
    return await Promise.all(writers.map((w) => w.result));
  } finally {
    for (const w of writers) w.kill();
  }
}

export const processCases: ConformanceCase[] = [
  {
    name: 'concurrent writers in two processes: exactly one wins each version, no entry is lost or overwritten',
    requires: ['crossProcess'],
    timeoutMs: 60_000,
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const writers: WriterProcess[] = ['A', 'B'].map((writer) =>
          ctx.spawnWriter!(store, {
            runId: 'race',
            writer,
            saves: SAVES,
            entriesPerSave: ENTRIES_PER_SAVE,
            pauseMs: 2,
            meetWithinMs: 10_000,
          }),
        );
        // Both begin at version 0: they race to create the run too.
        const reports = (await raceAll(writers)) as SaveRaceReport[];

        const wins = reports.flatMap((r) => r.won.map((won) => ({ ...won, writer: r.writer })));
        wins.sort((a, b) => a.version - b.version);
        const total = wins.length;
        assert.ok(total >= 2 * SAVES);
        assert.deepEqual(
          wins.map((w) => w.version),
          Array.from({ length: total }, (_, i) => i + 1),
          'every version from 1 was won by exactly one writer',
        );
        const run = await store.load('race');
        assert.equal(run?.version, total);
        assert.deepEqual(
          run?.entries,
          wins.flatMap((w) => w.entries),
          'the stored entries are the winners’ appends, in version order, each once',
        );
        assert.equal(run?.head, JSON.stringify({ writer: wins.at(-1)?.writer, version: total }));
        // Each winning save had read the version just before it: no write was based on a stale read.
        for (const w of wins) assert.equal(JSON.parse(w.entries[0] as string).read, w.version - 1);

        // The race was real: a writer lost at least once, or their wins interleave. (Neither
        // would mean one process finished before the other began, and nothing was tested.)
        const [a, b] = reports.map((r) => r.won.map((w) => w.version)) as [number[], number[]];
        const overlap = Math.min(Math.max(...a), Math.max(...b)) > Math.max(Math.min(...a), Math.min(...b));
        const conflicts = reports.reduce((n, r) => n + r.conflicts, 0);
        assert.ok(
          overlap || conflicts > 0,
          `the writers never met (A won ${a.join(',')}; B won ${b.join(',')}; no conflicts)`,
        );
      }),
  },
  {
    name: 'two processes race to claim the same runs: exactly one wins each, the other is told who holds it and cannot save without a lease',
    requires: ['crossProcess'],
    timeoutMs: 60_000,
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const runIds = Array.from({ length: CLAIMED_RUNS }, (_, i) => `claimed-${i}`);
        // Both claim the runs in the same order, each as soon as the last is done: every claim is contested.
        const writers = ['A', 'B'].map((writer) =>
          ctx.spawnWriter!(store, { kind: 'claims', writer, runIds, leaseMs: 60_000 }),
        );
        const reports = (await raceAll(writers)) as ClaimRaceReport[];
        for (const runId of runIds) {
          const winners = reports.flatMap((r) => r.claimed.filter((c) => c.runId === runId).map(() => r.writer));
          assert.equal(winners.length, 1, `exactly one process claimed ${runId} (${winners.join(', ') || 'none'})`);
          const winner = winners[0] as string;
          const claim = reports.flatMap((r) => r.claimed).find((c) => c.runId === runId);
          assert.deepEqual([claim?.token, claim?.version], [1, 1]);
          const losers = reports.flatMap((r) =>
            r.busy.filter((b) => b.runId === runId).map((b) => [r.writer, b.holder]),
          );
          assert.deepEqual(
            losers,
            [[winner === 'A' ? 'B' : 'A', winner]],
            `the other process was told ${winner} holds ${runId}`,
          );
          const run = await store.load(runId);
          assert.equal(run?.version, 1);
          assert.equal(run?.head, JSON.stringify({ writer: winner }), 'only the winner wrote the run');
          // The winner's lease is live in this process too.
          await assert.rejects(store.claim(runId, { owner: 'parent', leaseMs: 1_000 }), (error: Error) => {
            assert.equal(error.name, 'RunBusyError');
            assert.equal((error as Error & { holder?: string }).holder, winner);
            return true;
          });
        }
        assert.equal(
          reports.reduce((n, r) => n + r.refusedSaves, 0),
          CLAIMED_RUNS,
          'every save without a lease by the losing process was refused',
        );
      }),
  },
  {
    name: 'two processes race claimNext over the same runnable runs: each run is taken by exactly one of them, once',
    requires: ['crossProcess'],
    timeoutMs: 60_000,
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const runIds = Array.from({ length: CLAIMED_RUNS }, (_, i) => `next-${String(i).padStart(2, '0')}`);
        for (const runId of runIds) await store.save(runId, write({ agent: 'refunds' }), 0);
        await store.save('other-agent', write({ agent: 'billing' }), 0);
        const writers = ['A', 'B'].map((writer) =>
          ctx.spawnWriter!(store, { kind: 'claimNext', writer, agents: ['refunds'], leaseMs: 60_000 }),
        );
        const reports = (await raceAll(writers)) as ClaimNextRaceReport[];
        const taken = reports.flatMap((r) => r.taken.map((t) => t.runId));
        assert.deepEqual([...taken].sort(), runIds, 'every run was taken, none twice');
        for (const r of reports) {
          assert.deepEqual(
            r.taken.map((t) => t.token),
            r.taken.map(() => 1),
          );
          // Each process took its runs oldest first.
          assert.deepEqual(
            r.taken.map((t) => t.runId),
            [...r.taken.map((t) => t.runId)].sort(),
          );
        }
        assert.equal(await store.claimNext({ owner: 'parent', leaseMs: 1_000, agents: ['refunds'] }), null);
      }),
  },
];
