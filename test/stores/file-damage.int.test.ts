/**
 * FileStore with a damaged run: it is that run's problem only. `list` (the approval inbox) shows
 * every other run and reports the damaged one through `onDamaged`; `load` and `save` of it throw
 * a `CheckpointError` naming it; `delete` removes it.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Agent, CheckpointError, type RunWrite, StoreUnavailableError } from '../../src/index.js';
import { runDirName } from '../../src/stores/file/format.js';
import { type DamagedRun, FileStore } from '../../src/stores/file.js';
import { sequence } from '../support/helpers.js';

const root = mkdtempSync(join(tmpdir(), 'tollgate-file-damage-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

const waiting = (runId: string): RunWrite => ({
  status: 'awaiting_approval',
  head: '{}',
  from: 0,
  append: ['"goal"'],
  pendingCalls: [
    {
      id: `${runId}:1#1`,
      key: `${runId}:1`,
      step: 1,
      tool: 'pay',
      args: { cents: 500 },
      attempt: 1,
      requestedAt: '2026-01-01T00:00:00.000Z',
      expiresAt: null,
    },
  ],
});

/** A store holding three runs awaiting approval, with damage reports collected. */
async function inbox() {
  const damage: DamagedRun[] = [];
  const store = new FileStore({ dir: join(root, String(++n)), onDamaged: (d) => damage.push(d) });
  for (const id of ['a', 'bad', 'c']) await store.save(id, waiting(id), 0);
  const headOf = (id: string) => join(store.dir, 'runs', runDirName(id), 'head.json');
  return { store, damage, headOf };
}

describe('FileStore: one damaged run', () => {
  it('a head that is not JSON: the inbox lists the others, reports it, and load names it', async () => {
    const { store, damage, headOf } = await inbox();
    writeFileSync(headOf('bad'), '{"runId":"bad","vers');
    expect((await store.list({ status: 'awaiting_approval' })).map((r) => r.runId)).toEqual(['a', 'c']);
    expect((await store.list()).map((r) => r.runId)).toEqual(['a', 'c']);
    expect(damage).toHaveLength(2);
    expect(damage[0]).toMatchObject({ runId: 'bad', dir: join(store.dir, 'runs', runDirName('bad')) });
    expect(damage[0]?.error).toBeInstanceOf(CheckpointError);
    expect(damage[0]?.error.message).toBe(`file store: run "bad" is damaged: ${headOf('bad')} has no metadata line`);

    const error = await store.load('bad').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckpointError);
    expect(error).toMatchObject({ runId: 'bad', message: damage[0]?.error.message });
    await expect(store.save('bad', waiting('bad'), 1)).rejects.toMatchObject({ name: 'CheckpointError', runId: 'bad' });
    await expect(Agent.load(store, 'bad', { policy: sequence(), tools: [] })).rejects.toMatchObject({
      name: 'CheckpointError',
      runId: 'bad',
    });
    // The others are untouched and still work.
    expect((await store.load('a'))?.version).toBe(1);
    expect(await store.save('c', { ...waiting('c'), status: 'done', from: 1, append: [] }, 1)).toBe(2);
  });

  it('metadata of the wrong shape is damage too; a journal name that is a path is never followed', async () => {
    const { store, damage, headOf } = await inbox();
    const [meta, head] = readFileSync(headOf('bad'), 'utf8').split('\n') as [string, string];
    for (const [change, problem] of [
      [{ journal: '../../../../etc/passwd' }, 'journal is not a journal file name'],
      [{ version: 0 }, 'version is not a whole number ≥ 1'],
      [{ status: 'paid' }, 'status "paid" is not a status'],
      [{ updatedAt: 'yesterday' }, 'updatedAt is not an ISO-8601 time'],
      [{ journalBytes: -1 }, 'journalBytes is not a whole number ≥ 0'],
    ] as const) {
      writeFileSync(headOf('bad'), `${JSON.stringify({ ...JSON.parse(meta), ...change })}\n${head}`);
      damage.length = 0;
      expect((await store.list()).map((r) => r.runId)).toEqual(['a', 'c']);
      expect(damage.map((d) => d.error.message)).toEqual([
        `file store: run "bad" is damaged: ${headOf('bad')} has bad metadata: ${problem}`,
      ]);
      await expect(store.load('bad')).rejects.toMatchObject({ name: 'CheckpointError', runId: 'bad' });
    }
  });

  it('a head copied into another run’s folder is reported, not listed twice or under the wrong id', async () => {
    const { store, damage, headOf } = await inbox();
    writeFileSync(headOf('bad'), readFileSync(headOf('a')));
    expect((await store.list()).map((r) => r.runId)).toEqual(['a', 'c']);
    expect(damage.map((d) => [d.runId, d.error.message])).toEqual([
      ['bad', `file store: run "bad" is damaged: ${headOf('bad')} holds run "a" instead`],
    ]);
    await expect(store.load('bad')).rejects.toThrow(
      `file store: run "bad" is damaged: ${headOf('bad')} holds run "a" instead`,
    );
  });

  it('a truncated journal: load names the run; list (which reads heads only) still shows it', async () => {
    const { store, damage } = await inbox();
    const dir = join(store.dir, 'runs', runDirName('bad'));
    const journal = join(dir, readdirSync(dir).find((f) => f.startsWith('journal-')) as string);
    truncateSync(journal, 2);
    const error = await store.load('bad').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckpointError);
    expect(error).toMatchObject({ runId: 'bad' });
    expect((error as Error).message).toMatch(
      /^file store: run "bad" is damaged: .*journal-.*\.log is shorter than its head says/,
    );
    expect((await store.list()).map((r) => r.runId)).toEqual(['a', 'bad', 'c']);
    expect(damage).toEqual([]);
  });

  it('a journal that is gone: load and summary of the run settle (load names it, after reading again), the others load', async () => {
    const { store } = await inbox();
    const dir = join(store.dir, 'runs', runDirName('bad'));
    rmSync(join(dir, readdirSync(dir).find((f) => f.startsWith('journal-')) as string));
    const error = await store.load('bad').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckpointError);
    expect(error).toMatchObject({ runId: 'bad' });
    expect((error as Error).message).toMatch(/^file store: run "bad" is damaged: .*journal-.*\.log is missing$/);
    // The head alone is still read: the inbox shows the run, and the others load whole.
    expect(await store.summary('bad')).toMatchObject({ runId: 'bad', status: 'awaiting_approval' });
    expect((await store.load('a'))?.entries).toEqual(['"goal"']);
  });

  it('a journal whose length field is not plain digits is damage, never a reader looping in place', async () => {
    const { store } = await inbox();
    const dir = join(store.dir, 'runs', runDirName('bad'));
    const journal = join(dir, readdirSync(dir).find((f) => f.startsWith('journal-')) as string);
    const size = readFileSync(journal).length;
    // Same length as the journal the head counts: `\n-4:` read with Number() sent the reader back
    // to byte 1 forever; a sign, white space or hex is not what the journal writes.
    for (const start of ['\n-4:', ' 12:', '0x1:', '+3:a', '1e1:']) {
      writeFileSync(journal, Buffer.concat([Buffer.from(start), Buffer.alloc(size - start.length, 0x61)]));
      const error = await store.load('bad').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CheckpointError);
      expect((error as Error).message).toMatch(/journal-.*\.log is corrupt at byte [01]$/);
    }
  });

  it('delete removes a damaged run (without an expected version: it has no readable one)', async () => {
    const { store, damage, headOf } = await inbox();
    writeFileSync(headOf('bad'), 'garbage');
    await expect(store.delete('bad', 1)).rejects.toMatchObject({ name: 'CheckpointError', runId: 'bad' });
    expect(await store.delete('bad')).toBe(true);
    expect(await store.load('bad')).toBeNull();
    expect((await store.list()).map((r) => r.runId)).toEqual(['a', 'c']);
    expect(damage).toEqual([]);
    // The id can be used again.
    expect(await store.save('bad', waiting('bad'), 0)).toBe(1);
  });

  it('without onDamaged: one process warning per damaged run, not one per list', async () => {
    const dir = join(root, String(++n));
    const store = new FileStore({ dir });
    for (const id of ['a', 'bad']) await store.save(id, waiting(id), 0);
    writeFileSync(join(store.dir, 'runs', runDirName('bad'), 'head.json'), '');
    const warnings: Error[] = [];
    const listen = (warning: Error) => warnings.push(warning);
    process.on('warning', listen);
    try {
      for (let i = 0; i < 3; i++) expect((await store.list()).map((r) => r.runId)).toEqual(['a']);
      await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
    } finally {
      process.off('warning', listen);
    }
    expect(warnings.map((w) => [(w as { code?: string }).code, w.message])).toEqual([
      [
        'TOLLGATE_DAMAGED_RUN',
        `file store: run "bad" is damaged: ${join(store.dir, 'runs', runDirName('bad'), 'head.json')} has no metadata line; list() leaves it out`,
      ],
    ]);
  });
});

describe('FileStore on a directory it cannot use', () => {
  it('a dir that is a file: StoreUnavailableError naming the path, not a raw ENOTDIR', async () => {
    const file = join(root, `not-a-dir-${++n}`);
    writeFileSync(file, 'x');
    const store = new FileStore({ dir: file });
    const error = await store.save('r', waiting('r'), 0).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toMatch(new RegExp(`^FileStore\\.save: ${file}.*: ENOTDIR`));
    await expect(store.list()).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await store.load('r')).toBeNull();
  });
});
