/**
 * Issue 3, item 3, and issue 12: fast-check command sequences on the real Agent, with the
 * machine's pure `transition()` as the model and a ledger of side effects outside the agent
 * (invariants 1-7, per call of a step): long runs mixing steps of several calls, decisions on any
 * subset of the pending calls, edits, standing approvals, each call's expiry, crashes anywhere.
 *
 * CI runs a fixed seed; `npm run test:soak` runs far more cases with a fresh seed. To replay a
 * failure: TOLLGATE_SEED=<seed> TOLLGATE_PATH=<path> TOLLGATE_REPLAY=<replayPath>
 * npx vitest run test/model/commands.int.test.ts
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent.js';
import { commandArbitraries, setupArbitrary } from './support/arbitraries.js';
import { type Model, newCase } from './support/commands.js';
import { FIXED_RUN, figures, n, tally, writeCommand } from './support/figures.js';
import { inFreshProcess } from './support/spawn.js';
import { World } from './support/world.js';

const SOAK = process.env.TOLLGATE_SOAK === '1';
/** Under mutation testing each mutant reruns this: fewer cases, no child process. */
const MUTATION = process.env.TOLLGATE_MUTATION === '1';
const SEED = process.env.TOLLGATE_SEED ? Number(process.env.TOLLGATE_SEED) : SOAK ? Date.now() % 2 ** 31 : 20_260_101;
const RUNS = Number(process.env.TOLLGATE_RUNS ?? (SOAK ? 3_000 : MUTATION ? 100 : 650));
const PATH = process.env.TOLLGATE_PATH;
/** The commands' own replay path, printed with a failure (`replayPath` in the counterexample). */
const REPLAY = process.env.TOLLGATE_REPLAY;
const MAX_COMMANDS = SOAK ? 600 : 300;
/** What the commands did to the steps' calls (support/commands.ts, `noteCalls`): each must happen. */
const CALL_COUNTS = [
  'steps with several calls',
  'decision maps of several calls',
  'partial decisions (others left pending)',
  'edited approvals',
  'calls covered by a standing approval',
  'steps with one call expired, another decided in time',
  'expiries of one call among several pending',
  'crashes between the calls of a step',
];
/**
 * What users combine (issue 32): standing approvals with edits, several calls of one tool under
 * one, and edits every check refuses, half of them arriving with `always`.
 */
const COMBINATION_COUNTS = [
  'standing approvals given with an edit',
  'calls covered by a standing approval given with an edit',
  'standing approvals given beside a pending call of the same tool',
  'steps with several calls of one tool under a standing approval',
  ...['forbidden', 'schema', 'rule'].flatMap((why) => [`edits refused: ${why}`, `edits refused: ${why}, with always`]),
];
/** The cost budget (issue 16), exercised, not just offered. */
const COST_COUNTS = [
  'stops for cost spent',
  'stops for an unknown cost',
  'cost budgets raised after a stop for cost',
  'resumes with a lower maxCostUsd',
  // Reserve, then settle: the token budget held before each call, usage estimated or capped after.
  'stops for a request the token budget cannot fit',
  'calls charged at the estimate',
  'calls charged at what was left',
];
/** A tool's `verify`, asked with a call of it in flight at a crash or timed out: every answer. */
const VERIFY_COUNTS = ['done', 'notDone', 'unknown'].flatMap((a) => [
  `verify answers ${a} after a crash`,
  `verify answers ${a} after a timeout`,
]);
const ALL_COUNTS = [...CALL_COUNTS, ...COMBINATION_COUNTS, ...COST_COUNTS, ...VERIFY_COUNTS];
/** This run's figures, for docs/testing.md (support/figures.ts). */
const FIGURES: string[] = [];
const FILE = 'test/model/commands.int.test.ts';

describe('command sequences on the real Agent, against the machine as model', () => {
  it(`hold invariants 1-7 and match the model (seed ${SEED}, ${RUNS} cases)`, {
    timeout: SOAK ? 3_600_000 : 120_000,
  }, async () => {
    console.log(
      `[model] fast-check seed ${SEED}, ${RUNS} cases of up to ${MAX_COMMANDS} commands${PATH ? `, path ${PATH}` : ''}`,
    );
    const blobs: string[] = [];
    const executed = new Map<string, number>();
    const calls = new Map<string, number>();
    const statuses = new Set<string>();
    let commands = 0;
    let longest = 0;
    let crashesMidCall = 0;
    const started = Date.now();
    const property = fc.asyncProperty(
      setupArbitrary,
      fc.commands(commandArbitraries(), {
        size: 'max',
        maxCommands: MAX_COMMANDS,
        ...(REPLAY ? { replayPath: REPLAY } : {}),
      }),
      async (setup, cmds) => {
        const c: { model: Model; real: World } = newCase(setup);
        const seen: string[] = [];
        const track = c.real.perform.bind(c.real);
        c.real.perform = async (move) => {
          if (move.kind === 'crash' && c.real.status === 'running') crashesMidCall++;
          await track(move);
          seen.push(c.real.status);
        };
        await fc.asyncModelRun(() => c, cmds);
        for (const s of seen) statuses.add(s);
        for (const kind of c.model.executed) executed.set(kind, (executed.get(kind) ?? 0) + 1);
        for (const what of c.model.seen) calls.set(what, (calls.get(what) ?? 0) + 1);
        commands += c.model.executed.length;
        longest = Math.max(longest, c.model.executed.length);
        blobs.push(c.real.agent.checkpoint());
      },
    );
    const details = await fc.check(property, { seed: SEED, numRuns: RUNS, ...(PATH ? { path: PATH } : {}) });
    if (details.failed) {
      throw new Error(
        `fast-check failed: replay with TOLLGATE_SEED=${details.seed} TOLLGATE_PATH=${details.counterexamplePath} ` +
          `TOLLGATE_REPLAY=<the replayPath of the counterexample below>\n` +
          `${fc.defaultReportMessage(details)}\n${String(details.errorInstance)}`,
      );
    }
    FIGURES.push(
      `seed ${SEED}: ${n(details.numRuns)} cases of up to ${MAX_COMMANDS} commands, ${n(commands)} commands run ` +
        `(the longest case ${longest}), ${n(crashesMidCall)} crashes mid-call`,
      `by move: ${tally(executed)}`,
      `what the moves did to the steps' calls: ${tally(calls, CALL_COUNTS)}`,
      `standing approvals and edits: ${tally(calls, COMBINATION_COUNTS)}`,
      `the cost and token budgets: ${tally(calls, COST_COUNTS)}`,
      `a tool's verify: ${tally(calls, VERIFY_COUNTS)}`,
    );
    console.log(`[model] fast-check in ${Date.now() - started} ms:\n[model]   ${FIGURES.join('\n[model]   ')}`);
    // Not vacuous: long runs, every status, crashes mid-call, the loops simple paths miss.
    expect(details.numRuns).toBe(RUNS);
    expect(longest).toBeGreaterThanOrEqual(Math.min(30, MAX_COMMANDS));
    expect([...statuses].sort()).toEqual(
      [...new Set(['running', 'awaiting_approval', 'budget_exhausted', 'done', 'failed', 'cancelled', 'idle'])].sort(),
    );
    expect(crashesMidCall).toBeGreaterThan(0);
    const everyMove = ['approve', 'deny', 'approveLate', 'decide', 'expire', 'crash', 'crash(after)', 'extend', 'wait'];
    for (const kind of [...everyMove, 'decideStale', 'decideExpired', 'decideEditForbidden', 'decideUnnamed']) {
      expect(executed.get(kind) ?? 0, kind).toBeGreaterThanOrEqual(MUTATION ? 1 : 5);
    }
    for (const kind of ['decideNothing', 'startAgain', 'policy:call', 'policy:calls']) {
      expect(executed.get(kind) ?? 0, kind).toBeGreaterThanOrEqual(MUTATION ? 1 : 5);
    }
    for (const what of ALL_COUNTS) expect(calls.get(what) ?? 0, what).toBeGreaterThanOrEqual(MUTATION ? 0 : 3);
    // Expiry of one call among several, weighted up (issue 32: it had sunk to the floor of 3).
    expect(calls.get('expiries of one call among several pending') ?? 0).toBeGreaterThanOrEqual(MUTATION ? 0 : 10);

    // Invariant 5: every final checkpoint loads in a new process and writes itself back.
    if (MUTATION) return;
    const { pid, results } = await inFreshProcess<{ index: number; problem: string | null }>({ blobs });
    expect(pid).not.toBe(process.pid);
    expect(results.filter((r) => r.problem !== null)).toEqual([]);
    expect(results).toHaveLength(blobs.length);
    FIGURES.push(`final checkpoints loaded in a child process: ${n(results.length)}`);
  });

  it.skipIf(!FIXED_RUN)('docs/testing.md holds these figures (support/figures.ts)', () => {
    expect(FIGURES.length, 'the command sequences did not finish: no figures').toBeGreaterThan(6);
    const { inDoc, ran } = figures('commands', FIGURES);
    expect(inDoc, 'docs/testing.md has no model-figures:commands block').not.toBeNull();
    expect(inDoc, `docs/testing.md's figures are stale: ${writeCommand(FILE)}`).toBe(ran);
  });
});

describe('regressions of runtime bugs these suites found', () => {
  // resume-lower-budget-still-calls, fixed in 6843266: found by the ledger's budget check.
  it('resume-lower-budget-still-calls: resuming mid policy call with maxSteps already reached calls nothing', async () => {
    const world = new World({
      limits: { maxSteps: 1, maxTokens: null, maxActiveMs: null, maxCostUsd: null },
      approvalTtlMs: null,
      policyRetries: 0,
      retryDelayMs: 0,
    });
    await world.perform({ kind: 'start' });
    expect(world.gate?.kind).toBe('policy'); // step 1 is being asked for
    await world.perform({ kind: 'crash', maxSteps: 0 }); // the new process allows no step at all
    // Before the fix the resumed run asked the policy for step 1 again: steps 0 >= maxSteps 0.
    expect(world.gate).toBeNull();
    expect(world.ledger.data.violations).toEqual([]);
    expect(world.status).toBe('budget_exhausted');
  });

  // Found by these suites, fixed: src/actors.ts wrapped a thrown non-object in
  // `new Error(describeError(error))`, and the machine's describeError prefixed it again.
  it('a policy that throws a string fails the run with "Error: <string>", not "Error: Error: <string>"', async () => {
    const agent = new Agent({
      policy: () => {
        throw 'boom';
      },
      tools: [],
      policyRetries: 0,
      runId: 'r',
    });
    expect(await agent.start('g')).toBe('failed');
    expect(agent.state.error).toBe('Error: boom'); // was 'Error: Error: boom'
  });
});
