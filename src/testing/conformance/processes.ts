/** Two OS processes racing saves on one run: the optimistic concurrency promise, for real. */
import assert from 'node:assert/strict';
import { withStore } from './fixtures.js';
import type { ConformanceCase, WriterProcess, WriterReport } from './types.js';

const SAVES = 30;
const ENTRIES_PER_SAVE = 2;

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
        let reports: WriterReport[];
        try {
          await Promise.all(writers.map((w) => w.ready));
          for (const w of writers) w.go(); // both begin at version 0: they race to create the run too
          reports = await Promise.all(writers.map((w) => w.result));
        } finally {
          for (const w of writers) w.kill();
        }

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
];
