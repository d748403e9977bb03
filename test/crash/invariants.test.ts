// The crash test's invariants on made-up evidence: what counts as two live owners of one run
// (a call re-asked while its caller lived, a lost save, policy calls past the budget) and what
// a crash explains. The SIGKILL test (kill.int.test.ts) only fails if these checks do.
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/stores/memory.js';
import { type Children, checkInvariants, type Lifetime, type LoggedDecision } from './invariants.js';
import type { PayRow, World } from './ledger.js';
import { type CrashReport, emptyReport as newReport } from './scenario.js';

const PAYER = 101;
const ASKER = 102;

function worldWith(pay: PayRow[]): World {
  return {
    store: new MemoryStore(),
    setup: async () => {},
    pay: async () => {},
    ship: async () => {},
    payRows: async () => pay,
    shipRows: async () => [],
    close: async () => {},
  };
}

function decision(attempt: number, at: number, outcome: 'unknown' | null, approved = true): LoggedDecision {
  return {
    runId: 'r',
    callId: `r:2#${attempt}`,
    approved,
    note: outcome ? 'ledger: already paid' : 'looks right',
    key: 'r:2',
    tool: 'pay',
    attempt,
    outcome,
    applied: true,
    at,
  };
}

const emptyReport = (): CrashReport => newReport('test', 0);

/** The payer paid r:2 on its first approval; the asker asked again (denied) at t = 1000. */
async function reAskedAt1000(payer: Lifetime, children: Partial<Children> = {}) {
  const log = new Map([decision(1, 0, null), decision(2, 1_000, 'unknown', false)].map((d) => [d.callId, d]));
  const lives = new Map<number, Lifetime>([
    [PAYER, payer],
    [ASKER, { from: 500, to: null, killedAt: null, killed: false }],
  ]);
  const report = emptyReport();
  const world = worldWith([{ key: 'r:2', call_id: 'r:2#1', run_id: 'r', pid: PAYER }]);
  await checkInvariants(world, [], log, { lives, paying: new Map(), policyCalls: new Map(), ...children }, report);
  return report.violations;
}

describe('the crash test’s invariants', () => {
  it('a call asked about again while the child that paid it lives is two live owners', async () => {
    const alive = await reAskedAt1000({ from: 0, to: null, killedAt: null, killed: false });
    expect(alive).toEqual([expect.stringMatching(/^r:2 asked again \(r:2#2, outcome unknown, denied\) while pid 101/)]);
    // …unless that child lost its lease on the run to a stall and was told so: then a note.
    const stalled = { from: 0, to: null, killedAt: null, killed: false };
    expect(await reAskedAt1000(stalled, { lostRuns: new Set(['r']) })).toEqual([]);
    // Killed at 900 but its exit heard only at 1100: its work ended with the SIGKILL.
    expect(await reAskedAt1000({ from: 0, to: 1_100, killedAt: 900, killed: true })).toEqual([]);
    expect(await reAskedAt1000({ from: 0, to: 1_100, killedAt: 1_050, killed: true })).toHaveLength(1);
  });

  it('a call started by a child that never paid counts too, once the parent heard it start', async () => {
    const payer = { from: 0, to: null, killedAt: null, killed: false };
    // Neither call has run to its result yet: the first hangs in the payer, the second waits.
    const calls = [decision(1, 0, null), decision(2, 1_000, 'unknown')].map((d) => ({ ...d, applied: false }));
    const log = new Map(calls.map((d) => [d.callId, d]));
    const lives = new Map<number, Lifetime>([[PAYER, payer]]);
    const paying = new Map([['r:2#1', [PAYER]]]);
    const report = emptyReport();
    await checkInvariants(worldWith([]), [], log, { lives, paying, policyCalls: new Map() }, report);
    expect(report.violations).toEqual([expect.stringMatching(/while pid 101, which called pay on r:2#1, was alive/)]);
  });

  it('policy calls past steps plus killed callers are violations; saves refused on their version are noted', async () => {
    const lives = new Map<number, Lifetime>([
      [PAYER, { from: 0, to: 10, killedAt: 10, killed: true }],
      [ASKER, { from: 0, to: null, killedAt: null, killed: false }],
    ]);
    const within = new Map([['r', new Map([[PAYER, 1]])]]); // no steps saved: one wasted call by a killed child
    const over = new Map([['r', new Map([[ASKER, 1]])]]); // one wasted call by a live child
    const report = emptyReport();
    await checkInvariants(worldWith([]), [], new Map(), { lives, paying: new Map(), policyCalls: within }, report);
    expect(report.violations).toEqual([]);
    const conflictRuns = ['r', 'r'];
    await checkInvariants(
      worldWith([]),
      [],
      new Map(),
      { lives, paying: new Map(), policyCalls: over, conflictRuns },
      report,
    );
    expect(report.violations).toEqual(['run r: 1 policy calls for 0 steps with 0 killed callers']);
    expect(report.notes).toEqual(['2 saves refused on their version (ConflictError)']);
  });

  it('on a run a live child lost its lease on to a stall (and was told so), overlaps are notes, not violations', async () => {
    const lives = new Map<number, Lifetime>([[ASKER, { from: 0, to: null, killedAt: null, killed: false }]]);
    const over = new Map([['r', new Map([[ASKER, 1]])]]);
    const report = emptyReport();
    const lostRuns = new Set(['r']);
    await checkInvariants(
      worldWith([]),
      [],
      new Map(),
      { lives, paying: new Map(), policyCalls: over, conflictRuns: ['r', 'other'], lostRuns },
      report,
    );
    expect(report.violations).toEqual([]);
    expect(report.notes).toEqual([
      '1 saves refused on their version (ConflictError)',
      '1 conflicts on runs a stalled child lost its lease on',
      'run r: 1 policy calls for 0 steps with 0 killed callers (a live child lost its lease on it to a stall)',
    ]);
    expect(report.conflicts).toBe(2);
  });
});
