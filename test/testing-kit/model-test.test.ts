/**
 * `modelTest` of tollgate/testing/fast-check: a user-style agent that keeps its promises passes,
 * with crashes, decisions and expiries played; the kit finds the two planted bugs of a
 * user-style agent (an "idempotent" tool that ignores its key, a rule that lets a forbidden edit
 * through) and reports the shortest scenario.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/stores/memory.js';
import { SqliteStore } from '../../src/stores/sqlite.js';
import { modelTest } from '../../src/testing/fast-check.js';
import { decodeRun } from '../../src/testing/invariants.js';
import type { Tool } from '../../src/types.js';

const LIMIT = 5_000;

/** A user's fake payment provider: the keys that landed, deduplicated or not. */
class Bank {
  landed: string[] = [];
  refund(key: string, dedupe: boolean) {
    if (!dedupe || !this.landed.includes(key)) this.landed.push(key);
    return { ok: true };
  }
}

/** A user-style agent's tools: a lookup, a refund behind a rule, a notifier that deduplicates by key. */
function tools(bank: Bank, bugs: { ignoresKey?: boolean; lenientRule?: boolean } = {}): Tool[] {
  return [
    { name: 'lookup', fn: () => ({ cents: 1_200 }) },
    {
      name: 'refund',
      sideEffect: true,
      idempotent: true,
      // The lenient rule reads the model's own figure when there is one: an approver's edit
      // that keeps it but raises `cents` is let through.
      needsApproval: (args: { cents?: unknown; asked?: unknown }) => {
        const cents = bugs.lenientRule && typeof args.asked === 'number' ? args.asked : Number(args.cents);
        return cents > LIMIT ? { deny: 'over the limit' } : true;
      },
      fn: (_args: unknown, key: string) => bank.refund(key, !bugs.ignoresKey),
    },
  ];
}

const forbidden = ({ tool, args }: { tool: string; args: Record<string, unknown> }) =>
  tool === 'refund' && Number(args.cents) > LIMIT && 'a refund over the limit';
const cents = fc.integer({ min: 1, max: 2 * LIMIT });

/** The options of the user-style agent that keeps its promises, on `bank`. */
const agentOf = (bank: Bank) => ({
  tools: tools(bank),
  args: { refund: fc.record({ cents }) },
  edit: fc.record({ cents }),
  applied: () => bank.landed,
  reset: () => {
    bank.landed = [];
  },
  forbidden,
});

describe('modelTest', () => {
  it('passes an agent that keeps every promise, through crashes, decisions and expiries', async () => {
    const bank = new Bank();
    const report = await modelTest({
      ...agentOf(bank),
      seed: 20261206,
      numRuns: 100,
    });
    expect(report.scenarios).toBe(100);
    expect(report.moves).toBeGreaterThan(300);
    expect(report.crashes).toBeGreaterThan(10);
  }, 120_000);

  it('starts each scenario from the agent’s own conversation (system messages and earlier turns); a bad one fails up front', async () => {
    const bank = new Bank();
    const goal = [
      { role: 'system', content: 'You refund orders under the limit.' },
      { role: 'user', content: 'My order arrived broken.' },
      { role: 'assistant', content: 'Do you want a refund?' },
      { role: 'user', content: 'Yes.' },
    ] as const;
    const stores: MemoryStore[] = [];
    const report = await modelTest({
      ...agentOf(bank),
      goal,
      store: () => {
        const store = new MemoryStore();
        stores.push(store);
        return store;
      },
      seed: 20261207,
      numRuns: 40,
    });
    expect(report.crashes).toBeGreaterThan(0);
    // Each scenario's run began with the conversation, system message first.
    for (const store of stores) {
      const [run] = await store.list();
      const stored = run && (await store.load(run.runId));
      if (stored) expect(decodeRun(stored).context.history.slice(0, 4)).toEqual(goal);
    }
    await expect(modelTest({ tools: tools(bank), goal: [{ role: 'system', content: 'alone' }] })).rejects.toThrow(
      /^modelTest: messages need a user message after the system messages/,
    );
  }, 120_000);

  it('a process loaded after a crash can die too: the next one releases its lease and goes on (a scenario CI found)', async () => {
    // Crash after the first save; the reloaded process approves a refund for good and dies before
    // calling it. The reloaded process once used the store directly, so its death left its lease
    // held and the next load waited in vain (RunBusyError).
    const bank = new Bank();
    const report = await modelTest({
      ...agentOf(bank),
      seed: 1185265447,
      path: '15:0:2:1:1:1:1:1:1:1:1:1:1:1:1:6:6:7:7',
      numRuns: 20,
    });
    expect(report.crashes).toBeGreaterThanOrEqual(2);
  }, 60_000);

  const dir = mkdtempSync(join(tmpdir(), 'tollgate-model-test-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('on a SQLite file: each scenario on a database of its own', async () => {
    const bank = new Bank();
    let n = 0;
    const report = await modelTest({
      ...agentOf(bank),
      store: () => SqliteStore.open(join(dir, `run-${n++}.db`)),
      seed: 7,
      numRuns: 25,
    });
    expect(report.crashes).toBeGreaterThan(0);
  }, 120_000);

  it('finds an "idempotent" tool that ignores its key: a crash before its result is saved, and the key lands twice', async () => {
    const bank = new Bank();
    const found = await modelTest({
      tools: tools(bank, { ignoresKey: true }),
      args: { refund: fc.record({ cents }) },
      applied: () => bank.landed,
      reset: () => {
        bank.landed = [];
      },
      seed: 20261206,
      numRuns: 200,
    }).catch((error: Error) => error);
    expect(found).toBeInstanceOf(Error);
    expect(String(found)).toMatch(/once: the call with key model-run:\d+(\.\d)? \(refund\) took effect 2 times/);
    // The shortest scenario crashes after the refund ran and before its result was saved: after
    // its call, before the save that records it, or before the next call of the step.
    expect(String(found)).toMatch(/"kind":"crash","at":"(afterCall|beforeSave|beforeCall)"/);
  }, 120_000);

  it('finds a rule that lets a forbidden edit through', async () => {
    const bank = new Bank();
    const found = await modelTest({
      tools: tools(bank, { lenientRule: true }),
      args: { refund: fc.record({ cents: fc.constant(100), asked: fc.constant(100) }) },
      edit: fc.record({ cents, asked: fc.constant(100) }),
      forbidden,
      seed: 20261206,
      numRuns: 200,
    }).catch((error: Error) => error);
    expect(found).toBeInstanceOf(Error);
    expect(String(found)).toMatch(/forbidden: refund ran with \{"asked":100,"cents":\d+\}: a refund over the limit/);
  }, 120_000);
});
