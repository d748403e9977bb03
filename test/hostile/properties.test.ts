/**
 * The hostile-input suite (issue 10): fast-check feeds generated hostile values — prototype keys,
 * sparse and deep structures, Proxies, throwing getters and `toJSON`, BigInt, cycles, odd numbers,
 * lone surrogates — as policy actions, arguments, finals, usages, thrown errors and tool results.
 * After every run: no side effect ran without an approval, the checkpoint is valid JSON that
 * resumes to the same state (also through a store), the run is not left `running`, and every
 * error thrown at the caller is a `TollgateError`.
 *
 * CI runs a fixed seed; `npm run test:soak` runs many more cases with a fresh one. Replay a
 * failure with TOLLGATE_SEED=<seed> TOLLGATE_PATH=<path> npx vitest run test/hostile/properties.test.ts
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Agent, type Policy, TollgateError, type Tool } from '../../src/index.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { hostileStep, hostileValue, type Make } from './values.js';

const SOAK = process.env.TOLLGATE_SOAK === '1';
const SEED = process.env.TOLLGATE_SEED ? Number(process.env.TOLLGATE_SEED) : SOAK ? Date.now() % 2 ** 31 : 20_261_202;
const RUNS = Number(process.env.TOLLGATE_RUNS ?? (SOAK ? 5_000 : 150));
const PATH = process.env.TOLLGATE_PATH;

interface Effect {
  tool: string;
  approvedCallId: string | null;
}

function world(steps: { kind: 'return' | 'throw'; make: Make }[], result: Make) {
  const effects: Effect[] = [];
  const policy: Policy = (history) => {
    const turn = history.filter((e) => e.role === 'assistant' || e.role === 'tool').length;
    const step = steps[Math.min(turn, steps.length)];
    if (!step) return { final: 'end' };
    if (step.kind === 'throw') throw step.make();
    return step.make() as never;
  };
  const record =
    (tool: string) =>
    (_args: unknown, _key: string, ctx: { approvedCallId: string | null }): unknown => {
      effects.push({ tool, approvedCallId: ctx.approvedCallId });
      return result();
    };
  const tools: Tool[] = [
    { name: 'lookup', fn: record('lookup') },
    // The approval rule a prompt injection tries to fool with an inherited `dryRun`.
    { name: 'pay', sideEffect: true, needsApproval: (a: { dryRun?: unknown }) => a.dryRun !== true, fn: record('pay') },
    { name: 'mail', sideEffect: true, idempotent: true, fn: record('mail') },
  ];
  return { policy, tools, effects };
}

/** Runs an operation; an error thrown at the caller must be one of Tollgate's. */
async function call<T>(operation: () => Promise<T>, thrown: unknown[]): Promise<T | undefined> {
  try {
    return await operation();
  } catch (error) {
    thrown.push(error);
    return undefined;
  }
}

describe('hostile input', () => {
  it(`keeps the gate shut, the checkpoint valid and the process alive (seed ${SEED}, ${RUNS} cases)`, {
    timeout: SOAK ? 3_600_000 : 120_000,
  }, async () => {
    let settled = 0;
    let approvals = 0;
    const property = fc.asyncProperty(
      fc.array(hostileStep, { minLength: 1, maxLength: 6 }),
      hostileValue,
      fc.array(fc.boolean(), { maxLength: 6 }),
      fc.boolean(),
      async (steps, result, decisions, withStore) => {
        const { policy, tools, effects } = world(steps, result);
        const store = withStore ? new MemoryStore() : undefined;
        const thrown: unknown[] = [];
        const agent = new Agent({
          runId: 'h',
          policy,
          tools,
          maxSteps: 8,
          policyRetries: 0,
          ...(store ? { store } : {}),
        });
        await call(() => agent.start('hostile goal'), thrown);
        for (const approve of decisions) {
          if (agent.status !== 'awaiting_approval') break;
          approvals += approve ? 1 : 0;
          await call(() => agent.decide(approve, approve ? 'ok' : 'no', { by: 'tester' }), thrown);
        }
        for (const error of thrown) expect(error).toBeInstanceOf(TollgateError);
        expect(agent.status).not.toBe('running');
        settled++;

        // No side effect without an approval, whatever the model sent.
        for (const e of effects) if (e.tool !== 'lookup') expect(e.approvedCallId).not.toBeNull();

        // The checkpoint is JSON and resumes to the same state, in a fresh Agent and through the store.
        const blob = agent.checkpoint();
        expect(() => JSON.parse(blob)).not.toThrow();
        const resumed = Agent.resume(blob, { policy, tools });
        expect(resumed.checkpoint()).toBe(blob);
        expect(resumed.state).toEqual(agent.state);
        if (store) {
          const loaded = await Agent.load(store, 'h', { policy, tools });
          expect(loaded.checkpoint()).toBe(blob);
        }
      },
    );
    const details = await fc.check(property, { seed: SEED, numRuns: RUNS, ...(PATH ? { path: PATH } : {}) });
    if (details.failed) {
      throw new Error(
        `fast-check failed: replay with TOLLGATE_SEED=${details.seed} TOLLGATE_PATH=${details.counterexamplePath}\n` +
          `${fc.defaultReportMessage(details)}\n${String(details.errorInstance)}`,
      );
    }
    console.log(`[hostile] seed ${SEED}: ${settled} runs, ${approvals} approvals, all settled`);
    expect(settled).toBeGreaterThanOrEqual(RUNS);
  });
});
