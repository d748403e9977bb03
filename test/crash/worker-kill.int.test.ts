/**
 * Two worker processes on one SQLite store; the first is SIGKILLed in the middle of an approved,
 * non-idempotent call. The second takes the run over once the dead one's lease lapses and applies
 * the crash rule: the call is not made again; the run goes back to awaiting approval, marked
 * outcome unknown.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/index.js';
import { SqliteStore } from '../../src/stores/sqlite.js';
import { recordDecision, submitRun } from '../../src/worker/index.js';

const child = join(import.meta.dirname, 'worker-child.ts');
// The same name and tool as the child's: the parent submits and decides, it never runs a call.
const payer = defineAgent({
  name: 'payer',
  tools: [{ name: 'pay', sideEffect: true, fn: () => 'never called here' }],
  policy: () => ({ final: 'never called here' }),
});

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

function startWorker(db: string, ledger: string, hang: boolean): Promise<ChildProcess> {
  const c = spawn(process.execPath, ['--import', 'tsx', child, db, ledger], {
    env: { ...process.env, HANG: hang ? '1' : '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(c);
  return new Promise((ready, fail) => {
    c.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) ready(c);
    });
    c.on('exit', (code) => fail(new Error(`worker exited early (${code})`)));
  });
}

async function until(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('worker processes killed with SIGKILL (SQLite)', () => {
  it('the run of a worker killed mid-call is taken over; the call is not made again but asked again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-worker-kill-'));
    const db = join(dir, 'runs.db');
    const ledger = join(dir, 'ledger.txt');
    const lines = () => (existsSync(ledger) ? readFileSync(ledger, 'utf8').trim().split('\n') : []);
    const store = SqliteStore.open(db);
    try {
      await submitRun(store, { agent: payer, goal: 'pay', runId: 'k1' });
      const first = await startWorker(db, ledger, true);
      await until(async () => (await store.load('k1'))?.status === 'awaiting_approval', 'the approval');
      const callId = (await store.load('k1'))?.pendingCalls[0]?.id ?? '';
      await recordDecision(store, 'k1', { [callId]: { approve: true } }, { by: 'ana' });
      await until(() => lines().includes('start k1:1'), 'the call');
      first.kill('SIGKILL');

      const second = await startWorker(db, ledger, false);
      await until(async () => (await store.load('k1'))?.pendingCalls[0]?.outcome === 'unknown', 'the take-over');
      expect(lines()).toEqual(['start k1:1']); // not called again
      const again = (await store.load('k1'))?.pendingCalls[0];
      expect(again).toMatchObject({ key: 'k1:1', attempt: 2, outcome: 'unknown' });
      // A human says it went through: deny running it again; the run ends.
      await recordDecision(store, 'k1', { [again?.id ?? '']: { approve: false, note: 'it was paid' } }, { by: 'ana' });
      await until(async () => (await store.load('k1'))?.status === 'done', 'the end');
      expect(lines()).toEqual(['start k1:1']);
      second.kill('SIGTERM');
      await new Promise((r) => second.once('exit', r));
      expect(second.exitCode).toBe(0);
    } finally {
      await store.close();
    }
  }, 60_000);
});
