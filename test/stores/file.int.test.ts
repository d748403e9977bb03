/** FileStore specifics: the on-disk layout, torn writes, leftovers, locks, real SIGKILLs, pending calls and leases on disk. */
import { spawn } from 'node:child_process';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Agent, type CheckpointStore, OptionsError, type RunWrite, StoreUnavailableError } from '../../src/index.js';
import { joinRun } from '../../src/store/contract.js';
import { runDirName } from '../../src/stores/file/format.js';
import { withLock } from '../../src/stores/file/lock.js';
import { FileStore } from '../../src/stores/file.js';
import { spawnNodeWriter } from '../../src/testing/index.js';

const root = mkdtempSync(join(tmpdir(), 'tollgate-file-test-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = () => new FileStore({ dir: join(root, String(++n)) });
const write = (from = 0, append: string[] = [], head = '{}'): RunWrite => ({
  status: 'running',
  head,
  from,
  append,
  pendingCalls: [],
});
const runDir = (store: FileStore, runId: string) => join(store.dir, 'runs', runDirName(runId));
const journalOf = (store: FileStore, runId: string) => {
  const name = readdirSync(runDir(store, runId)).find((f) => f.startsWith('journal-'));
  return join(runDir(store, runId), name as string);
};

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const proc = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => proc.on('close', resolve));
  return proc.pid as number;
}

describe('FileStore: layout', () => {
  it('names run directories safely: no separators, no dots, case kept apart, long ids hashed', () => {
    expect(runDirName('run-1')).toBe('r-run-1');
    expect(runDirName('../x')).toBe('r-%2E%2E%2Fx');
    expect(runDirName('Run')).toBe('r-%52un');
    expect(runDirName('')).toBe('r-');
    expect(runDirName('日')).toBe('r-%E6%97%A5');
    const long = runDirName('x'.repeat(500));
    expect(long.length).toBeLessThanOrEqual(120);
    expect(long).not.toBe(runDirName(`${'x'.repeat(499)}y`));
  });

  it('a save appends to the journal and replaces the head: O(new entries), whatever the history', async () => {
    const store = fresh();
    await store.save('r', write(0, ['"a"', '"bb"']), 0);
    await store.save('r', write(2, ['"日本"']), 1);
    const dir = runDir(store, 'r');
    const files = readdirSync(dir);
    expect(files).toHaveLength(2);
    expect(files).toContain('head.json');
    expect(files.find((f) => f !== 'head.json')).toMatch(/^journal-[0-9a-f-]+\.log$/);
    expect(readFileSync(journalOf(store, 'r'), 'utf8')).toBe('3:"a"\n4:"bb"\n8:"日本"\n');
  });

  it('keeps no head bases: a write with one is an OptionsError and changes nothing; an agent writes its heads whole', async () => {
    const store = fresh();
    expect((store as CheckpointStore).keepsBase).toBeUndefined();
    await store.save('r', write(0, ['"a"']), 0);
    const before = readFileSync(join(runDir(store, 'r'), 'head.json'), 'utf8');
    await expect(store.save('r', { ...write(1, []), base: '{"b":2}' }, 1)).rejects.toThrow(
      /FileStore keeps no head bases/,
    );
    await expect(store.save('r', { ...write(1, []), base: '{"b":2}' }, 1)).rejects.toBeInstanceOf(OptionsError);
    expect(readFileSync(join(runDir(store, 'r'), 'head.json'), 'utf8')).toBe(before);
    const agent = new Agent({ runId: 'a', store, policy: () => ({ final: 'ok' }), tools: [] });
    await agent.start('go');
    const stored = await store.load('a');
    expect(JSON.parse(stored?.head ?? '{}')).toHaveProperty('h');
    expect(stored?.base).toBeUndefined();
    expect(joinRun(stored?.head ?? '', stored?.entries ?? [])).toBe(agent.checkpoint());
  });
});

describe('FileStore: crashes mid-save', () => {
  it('journal bytes past the head’s count (a save that died before its head) are ignored, then overwritten', async () => {
    const store = fresh();
    await store.save('r', write(0, ['"a"']), 0);
    appendFileSync(journalOf(store, 'r'), '3:"x"\n17:"torn, no newl'); // the crashed save's entries
    expect((await store.load('r'))?.entries).toEqual(['"a"']);
    await store.save('r', write(1, ['"b"']), 1);
    expect((await store.load('r'))?.entries).toEqual(['"a"', '"b"']);
    expect(readFileSync(journalOf(store, 'r'), 'utf8')).toBe('3:"a"\n3:"b"\n');
  });

  it('a first save that died before its head leaves no run; the next create clears its files', async () => {
    const store = fresh();
    const dir = runDir(store, 'r');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'journal-dead.log'), '3:"x"\n');
    writeFileSync(join(dir, 'head.json.dead.tmp'), 'partial');
    expect(await store.load('r')).toBeNull();
    expect(await store.list()).toEqual([]);
    await store.save('r', write(0, ['"a"']), 0);
    expect((await store.load('r'))?.entries).toEqual(['"a"']);
    expect(readdirSync(dir).filter((f) => f.includes('dead'))).toEqual([]);
  });

  it('a corrupt head is an error naming the run, not an empty run', async () => {
    const store = fresh();
    await store.save('r', write(), 0);
    writeFileSync(join(runDir(store, 'r'), 'head.json'), 'not json');
    await expect(store.load('r')).rejects.toMatchObject({ name: 'CheckpointError', runId: 'r' });
  });

  it('a closed store refuses work', async () => {
    const store = fresh();
    await store.close();
    await expect(store.load('r')).rejects.toThrow(/closed/);
  });
});

describe('FileStore: the run lock', () => {
  const lockAt = (store: FileStore, runId: string, owner: object | string) => {
    mkdirSync(runDir(store, runId), { recursive: true });
    const path = join(runDir(store, runId), 'lock');
    writeFileSync(path, typeof owner === 'string' ? owner : JSON.stringify({ host: hostname(), token: 't', ...owner }));
    return path;
  };
  const boot = async () => {
    try {
      return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    } catch {
      return '';
    }
  };

  it('a lock left by a dead process is broken', async () => {
    const store = fresh();
    lockAt(store, 'r', { pid: await deadPid(), boot: await boot() });
    expect(await store.save('r', write(), 0)).toBe(1);
    expect(readdirSync(runDir(store, 'r'))).not.toContain('lock');
  });

  /** When process `pid` started, as the lock records it (Linux only). */
  const startOf = (pid: number) => {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  };
  const linux = existsSync('/proc/self/stat');

  it.runIf(linux)('a lock whose pid now names another process (pids are reused) is broken', async () => {
    const store = fresh();
    const start = String(Number(startOf(process.ppid)) + 1);
    lockAt(store, 'r', { pid: process.ppid, start, boot: await boot() });
    expect(await store.save('r', write(), 0)).toBe(1);
  });

  it.runIf(linux)('a lock holds while its owner, started when it says, lives', async () => {
    const store = new FileStore({ dir: join(root, String(++n)), lockTimeoutMs: 50 });
    lockAt(store, 'r', { pid: process.ppid, start: startOf(process.ppid), boot: await boot() });
    await expect(store.save('r', write(), 0)).rejects.toThrow(/locked for over 50 ms/);
  });

  it.runIf(linux)('the lock a store takes records when its process started', async () => {
    const path = join(root, `lock-${++n}`);
    const body = await withLock(path, 1000, async () => readFileSync(path, 'utf8'));
    expect(JSON.parse(body)).toMatchObject({ pid: process.pid, start: startOf(process.pid), host: hostname() });
    expect(existsSync(path)).toBe(false);
  });

  it('a lock from before a reboot is broken, even if its pid is alive now', async () => {
    const store = fresh();
    lockAt(store, 'r', { pid: process.ppid, boot: 'another-boot' });
    expect(await store.save('r', write(), 0)).toBe(1);
  });

  it('a live process’s lock is waited for, then a save gives up with StoreUnavailableError; reads go on', async () => {
    const store = new FileStore({ dir: join(root, String(++n)), lockTimeoutMs: 50 });
    await store.save('r', write(0, ['"a"']), 0);
    lockAt(store, 'r', { pid: process.ppid, boot: await boot() });
    await expect(store.save('r', write(1), 1)).rejects.toThrow(/locked for over 50 ms/);
    await expect(store.delete('r')).rejects.toBeInstanceOf(StoreUnavailableError);
    expect((await store.load('r'))?.entries).toEqual(['"a"']);
  });

  it('an unreadable lock (its writer died between create and write) is stale once old, and waited out until then whatever the timeout', async () => {
    const store = new FileStore({ dir: join(root, String(++n)), lockTimeoutMs: 50 });
    const path = lockAt(store, 'r', '');
    const old = new Date(Date.now() - 60_000);
    utimesSync(path, old, old);
    expect(await store.save('r', write(), 0)).toBe(1);
    // Turning stale 300 ms from now, past the 50 ms timeout: the save waits for it, not fails.
    const fresh = lockAt(store, 'r2', '');
    const soon = new Date(Date.now() - 9_700);
    utimesSync(fresh, soon, soon);
    expect(await store.save('r2', write(), 0)).toBe(1);
  });

  it('SIGKILL at random moments: every restart finds a whole run and carries on', async () => {
    const store = fresh();
    const spec = { kind: 'file', dir: store.dir };
    const script = join(import.meta.dirname, '../support/store-writer.ts');
    const kills = 3;
    // Start every writer at once (process start-up is the slow part); each runs until killed.
    const writers = Array.from({ length: kills }, (_, i) =>
      spawnNodeWriter({
        script,
        spec,
        job: { runId: 'r', writer: `w${i}`, saves: 1e9, entriesPerSave: 2, pauseMs: 0 },
      }),
    );
    await Promise.all(writers.map((w) => w.ready));
    let locksLeft = 0;
    let tornTails = 0;
    let last = 0;
    for (const writer of writers) {
      writer.go();
      // Kill once it has saved a few times: mid-save, most likely (a save is mostly fsyncs).
      const deadline = Date.now() + 15_000;
      while (Date.now() < deadline && ((await store.load('r'))?.version ?? 0) < last + 3) {
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20));
      writer.kill();
      await writer.result.catch(() => {});
      if (readdirSync(runDir(store, 'r')).includes('lock')) locksLeft++;
      const meta = JSON.parse(readFileSync(join(runDir(store, 'r'), 'head.json'), 'utf8').split('\n')[0] as string);
      if (statSync(journalOf(store, 'r')).size > meta.journalBytes) tornTails++;
      const run = await store.load('r');
      expect(run?.entries.length).toBe(2 * (run?.version ?? 0));
      expect(JSON.parse(run?.head ?? '{}').version).toBe(run?.version);
      expect(run?.version).toBeGreaterThan(last);
      last = run?.version ?? 0;
    }
    // The parent goes on where the last killed process stopped, breaking its lock if it left one.
    expect(await store.save('r', write(2 * last, ['"after"']), last)).toBe(last + 1);
    console.log(
      `file store SIGKILL: ${kills} kills, ${last} saves survived, ${locksLeft} stale locks broken, ${tornTails} torn journal tails ignored`,
    );
  }, 30_000);
});

describe('FileStore: pending calls and leases on disk', () => {
  const call = {
    id: 'r:1#1',
    key: 'r:1',
    step: 1,
    tool: 'pay',
    args: { cents: 500 },
    attempt: 1,
    requestedAt: '2026-01-01T00:00:00.000Z',
    expiresAt: '2026-01-01T00:05:00.000Z',
  };
  const headFile = (store: FileStore, runId: string) => join(runDir(store, runId), 'head.json');
  const metaOf = (store: FileStore, runId: string) =>
    JSON.parse(readFileSync(headFile(store, runId), 'utf8').split('\n')[0] as string);
  const leaseFile = (store: FileStore, runId: string) => join(runDir(store, runId), 'lease.json');

  it('a head written before runs had several pending calls (pending: one call or null) reads as a list; the next save writes pendingCalls', async () => {
    const store = fresh();
    for (const [runId, pending] of [
      ['old', call],
      ['none', null],
    ] as const) {
      await store.save(runId, { ...write(0, ['"a"']), status: 'awaiting_approval' }, 0);
      // The metadata line exactly as the code before wrote it: `pending`, no `pendingCalls`.
      const [line, head] = readFileSync(headFile(store, runId), 'utf8').split('\n') as [string, string];
      const { pendingCalls: _, ...meta } = JSON.parse(line);
      writeFileSync(headFile(store, runId), `${JSON.stringify({ ...meta, pending })}\n${head}`);
    }
    const old = await store.load('old');
    expect([old?.pendingCalls, old?.pending]).toEqual([[call], call]);
    const none = await store.load('none');
    expect([none?.pendingCalls, none?.pending]).toEqual([[], null]);
    expect((await store.list({ expired: true })).map((r) => r.runId)).toEqual(['old']);
    await store.save('old', { ...write(1), pendingCalls: [call, call] }, 1);
    const meta = metaOf(store, 'old');
    expect(meta.pendingCalls).toEqual([call, call]);
    expect('pending' in meta).toBe(false);
  });

  it('a head written before workers (no agent, no decision) reads as null for both; claimNext skips it; the next save with an agent writes them', async () => {
    const store = fresh();
    await store.save('old', { ...write(0, ['"a"']), status: 'awaiting_approval', pendingCalls: [call] }, 0);
    const [line, head] = readFileSync(headFile(store, 'old'), 'utf8').split('\n') as [string, string];
    const { agent: _a, decision: _d, ...meta } = JSON.parse(line);
    expect([_a, _d]).toEqual([null, null]);
    writeFileSync(headFile(store, 'old'), `${JSON.stringify(meta)}\n${head}`);
    const old = await store.load('old');
    expect([old?.agent, old?.decision, old?.version]).toEqual([null, null, 1]);
    expect((await store.list()).map((r) => [r.agent, r.decision])).toEqual([[null, null]]);
    const decision = { decisions: { 'r:1#1': { approve: true } }, by: 'alice', at: '2026-01-01T00:01:00.000Z' };
    expect(await store.queueDecision('old', decision, 1)).toBe(2);
    expect(metaOf(store, 'old')).toMatchObject({ version: 2, decision, agent: null });
    expect(await store.claimNext({ owner: 'w', leaseMs: 1_000, agents: ['refunds'] })).toBeNull();
    await store.save('old', { ...write(1), agent: 'refunds' }, 2);
    expect(metaOf(store, 'old')).toMatchObject({ agent: 'refunds', decision: null });
    // A damaged agent or decision is damage, like any bad metadata.
    writeFileSync(headFile(store, 'old'), `${JSON.stringify({ ...metaOf(store, 'old'), agent: 7 })}\n${head}`);
    await expect(store.load('old')).rejects.toThrow(/agent is not a string or null/);
  });

  it('a lease taken before the first save is in lease.json; the first save moves it into the head; a delete moves it back out, so the token survives', async () => {
    const store = fresh();
    const a = await store.claim('r', { owner: 'worker-a', leaseMs: 60_000 });
    const expiresAt = Date.parse(a.expiresAt);
    expect(JSON.parse(readFileSync(leaseFile(store, 'r'), 'utf8'))).toEqual({
      runId: 'r',
      token: 1,
      owner: 'worker-a',
      expiresAt,
      process: null, // the claim gave none
    });
    expect(await store.load('r')).toBeNull();

    await store.save('r', write(0, ['"a"']), 0, a);
    expect(existsSync(leaseFile(store, 'r'))).toBe(false);
    expect(metaOf(store, 'r').lease).toMatchObject({ token: 1, owner: 'worker-a' });

    // A claim rewrites the head with the new record only: same version, same updatedAt.
    const before = await store.load('r');
    const again = await store.claim('r', { owner: 'worker-a', leaseMs: 60_000 });
    expect(again.token).toBe(2);
    expect(await store.load('r')).toEqual(before);
    expect(metaOf(store, 'r').lease).toMatchObject({ token: 2, owner: 'worker-a' });

    expect(await store.delete('r', 1, again)).toBe(true);
    expect(JSON.parse(readFileSync(leaseFile(store, 'r'), 'utf8'))).toMatchObject({ token: 2, owner: 'worker-a' });
    expect(await store.release(again)).toBe(true);
    expect(JSON.parse(readFileSync(leaseFile(store, 'r'), 'utf8'))).toEqual({
      runId: 'r',
      token: 2,
      owner: null,
      expiresAt: null,
      process: null,
    });
    expect((await store.claim('r', { owner: 'worker-b', leaseMs: 60_000 })).token).toBe(3);
  });

  it('with a head, its lease is the run’s: a lease.json left beside it (a first save that died before removing it) is ignored', async () => {
    const store = fresh();
    const a = await store.claim('r', { owner: 'worker-a', leaseMs: 60_000 });
    const leftover = readFileSync(leaseFile(store, 'r'), 'utf8');
    await store.save('r', write(), 0, a);
    writeFileSync(leaseFile(store, 'r'), leftover); // says worker-a holds token 1, live
    expect(await store.release(a)).toBe(true);
    const b = await store.claim('r', { owner: 'worker-b', leaseMs: 60_000 });
    expect(b.token).toBe(2);
    await expect(store.save('r', write(), 1, a)).rejects.toMatchObject({ name: 'LeaseLostError', currentToken: 2 });
  });

  it('a damaged lease.json is a CheckpointError naming the run, for claims of it only', async () => {
    const store = fresh();
    await store.claim('r', { owner: 'worker-a', leaseMs: 60_000 });
    writeFileSync(leaseFile(store, 'r'), '{"runId":"r","token":0}');
    await expect(store.claim('r', { owner: 'worker-b', leaseMs: 1_000 })).rejects.toMatchObject({
      name: 'CheckpointError',
      runId: 'r',
      message: expect.stringContaining('lease.json is not a lease: lease.token is not a whole number ≥ 1'),
    });
    expect((await store.claim('other', { owner: 'worker-b', leaseMs: 1_000 })).token).toBe(1);
  });
});
