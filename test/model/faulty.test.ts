/**
 * A test of the tests (issue 3, item 4, hand-made part; issue 12's variants added). Each faulty
 * variant replaces part of the real machine — a guard, an action, a rewired state, or one of the
 * pure call helpers of machines/calls.ts its actions are made of — for the Agent and the model
 * alike, as if the bug had been committed, or the real resume; then the shortest paths
 * (uninterrupted and with a crash after every step) and 60 command sequences run against it:
 * each variant must be caught, and caught by the check it breaks. A control run with no fault
 * must pass the same checks.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { VARIANTS, type Variant } from './support/faulty.js';

const SEED = 20_260_101;

interface Verdict {
  caught: string[];
  pathRuns: number;
  cases: number;
}

/** Runs the suites with `variant` in place; returns the first violations each suite reported. */
async function runSuites(variant: Variant | null): Promise<Verdict> {
  vi.resetModules();
  const calls = variant?.calls;
  if (calls) {
    vi.doMock('../../machines/calls.js', async (importOriginal) => {
      const real = await importOriginal<typeof import('../../machines/calls.js')>();
      return { ...real, ...calls(real) };
    });
  }
  const fault = variant?.machine;
  if (fault) {
    vi.doMock('../../machines/agent-machine.js', async (importOriginal) => {
      const real = await importOriginal<typeof import('../../machines/agent-machine.js')>();
      const helpers = await import('../../machines/calls.js');
      return { ...real, agentMachine: fault(real.agentMachine, helpers) };
    });
  }
  // Imported after the mocks: the Agent, the model and the paths all see the variant.
  const { shortestPaths, maximalPaths } = await import('./support/paths.js');
  const { runPaths } = await import('./support/path-suite.js');
  const { commandArbitraries, setupArbitrary } = await import('./support/arbitraries.js');
  const { newCase } = await import('./support/commands.js');
  const { Agent } = await import('../../src/agent.js');
  const resume = variant?.resume?.(Agent);
  const caught: string[] = [];

  const paths = maximalPaths(shortestPaths());
  const plain = await runPaths(paths, { ...(resume ? { resume } : {}), stopAtFirst: true });
  const crashing = await runPaths(paths, {
    ...(resume ? { resume } : {}),
    checkpointEveryStep: true,
    stopAtFirst: true,
  });
  for (const r of [plain, crashing]) {
    const f = r.failures[0];
    if (f) caught.push(`paths ${f.path}: ${f.violations.join(' / ')}`);
  }

  let cases = 0;
  const details = await fc.check(
    fc.asyncProperty(
      setupArbitrary,
      fc.commands(commandArbitraries(), { size: 'max', maxCommands: 100 }),
      async (setup, cmds) => {
        cases++;
        await fc.asyncModelRun(() => newCase(setup, resume), cmds);
      },
    ),
    { seed: SEED, numRuns: 60, endOnFailure: true },
  );
  if (details.failed)
    caught.push(`commands (seed ${SEED}, path ${details.counterexamplePath}): ${String(details.errorInstance)}`);
  return { caught, pathRuns: plain.runs + crashing.runs, cases };
}

afterEach(() => {
  vi.doUnmock('../../machines/calls.js');
  vi.doUnmock('../../machines/agent-machine.js');
  vi.resetModules();
});

describe('the suites catch hand-made faults', () => {
  it('control: the real machine and resume pass the same checks', { timeout: 120_000 }, async () => {
    const verdict = await runSuites(null);
    expect(verdict.caught).toEqual([]);
    expect(verdict.cases).toBe(60);
  });

  it.each(VARIANTS.map((v) => [v.name, v] as const))('%s', { timeout: 120_000 }, async (_name, variant) => {
    const verdict = await runSuites(variant);
    const shown = verdict.caught.map((c) => c.replace(/\s+/g, ' ').slice(0, 400));
    console.log(
      `[model] faulty variant "${variant.name}" caught by ${verdict.caught.length} of 3 suites:\n  ${shown.join('\n  ')}`,
    );
    expect(verdict.caught.length, 'no suite noticed the fault').toBeGreaterThan(0);
    expect(
      verdict.caught.some((c) => variant.caughtBy.test(c)),
      `not caught by ${variant.caughtBy}`,
    ).toBe(true);
  });
});
