/**
 * One conformance suite for every `CheckpointStore`: Tollgate's own stores run it unchanged,
 * and so can yours. The cases are plain async functions that throw (node:assert) on failure,
 * so any test runner can run them; `checkpointStoreConformance` registers them with a
 * vitest/jest/mocha-style `describe` and `it`.
 *
 * A store that cannot do something (an in-memory store cannot be shared by two processes)
 * leaves that capability out of its context and says why in `skip`; each case that needs it is
 * registered as skipped, with the reason in its name. Nothing is skipped silently.
 *
 * @example
 * import { describe, it } from 'vitest';
 * import { checkpointStoreConformance } from 'tollgate/testing';
 * checkpointStoreConformance('MyStore', {
 *   create: async () => new MyStore(),
 *   createWithClock: async (now) => new MyStore({ now }),
 *   skip: { crossProcess: 'in memory only', reopen: 'in memory only' },
 * }, { describe, it });
 */
import { agentCases } from './conformance/agent-case.js';
import { baseCases } from './conformance/bases.js';
import { basicCases } from './conformance/basics.js';
import { claimNextCases } from './conformance/claim-next.js';
import { claimOrderCases } from './conformance/claim-order.js';
import { claimCases } from './conformance/claims.js';
import { groupCases } from './conformance/groups.js';
import { holderCases } from './conformance/holders.js';
import { leaseCases } from './conformance/leases.js';
import { listingCases } from './conformance/listing.js';
import { openCases } from './conformance/open.js';
import { pendingCases } from './conformance/pending.js';
import { processCases } from './conformance/processes.js';
import { queueCases } from './conformance/queue.js';
import { refusalCases } from './conformance/refusals.js';
import { renewManyCases } from './conformance/renew-many.js';
import { scaleCases } from './conformance/scale.js';
import type { Capability, ConformanceCase, ConformanceContext } from './conformance/types.js';

export type {
  Capability,
  ClaimNextRaceJob,
  ClaimNextRaceReport,
  ClaimRaceJob,
  ClaimRaceReport,
  ConformanceCase,
  ConformanceContext,
  GroupSpendRaceJob,
  GroupSpendRaceReport,
  SaveRaceJob,
  SaveRaceReport,
  WriterJob,
  WriterProcess,
  WriterReport,
} from './conformance/types.js';
export { raceClaimNext, raceClaims, raceSaves, serveWriter, spawnNodeWriter } from './conformance/writer.js';

/** Every case, in a stable order. */
export const conformanceCases: readonly ConformanceCase[] = [
  ...basicCases,
  ...listingCases,
  ...pendingCases,
  ...leaseCases,
  ...holderCases,
  ...renewManyCases,
  ...openCases,
  ...claimCases,
  ...queueCases,
  ...claimNextCases,
  ...claimOrderCases,
  ...refusalCases,
  ...scaleCases,
  ...processCases,
  ...agentCases,
  ...groupCases,
  ...baseCases,
];

const provides: Record<Capability, (ctx: ConformanceContext) => boolean> = {
  crossProcess: (ctx) => typeof ctx.spawnWriter === 'function',
  reopen: (ctx) => typeof ctx.reopen === 'function',
  clock: (ctx) => typeof ctx.createWithClock === 'function',
  // An optional store capability: a store that has it says so.
  groupBudgets: (ctx) => ctx.groupBudgets === true,
  summary: (ctx) => ctx.summary === true,
  bases: (ctx) => ctx.bases === true,
  renewMany: (ctx) => ctx.renewMany === true,
  open: (ctx) => ctx.open === true,
};

/** Why a capability is missing when the context does not say: only optional store capabilities have one. */
const UNDECLARED: Partial<Record<Capability, string>> = {
  groupBudgets: 'an optional capability this store does not declare (groupBudgets: true in its context)',
  summary: 'an optional capability this store does not declare (summary: true in its context)',
  bases: 'an optional capability this store does not declare (bases: true in its context)',
  renewMany: 'an optional capability this store does not declare (renewMany: true in its context)',
  open: 'an optional capability this store does not declare (open: true in its context)',
};

/**
 * Why `ctx` cannot run `testCase`, or null when it can.
 * @throws Error when a capability is missing and the context gives no reason: skips must say why.
 */
export function skipReason(testCase: ConformanceCase, ctx: ConformanceContext): string | null {
  for (const capability of testCase.requires ?? []) {
    if (provides[capability](ctx)) continue;
    const why = ctx.skip?.[capability] ?? UNDECLARED[capability];
    if (!why) {
      throw new Error(
        `conformance: case "${testCase.name}" needs ${capability}; provide it in the context or give the reason in skip.${capability}`,
      );
    }
    return `${capability}: ${why}`;
  }
  return null;
}

/** The part of a test runner's API the suite uses (vitest, jest and mocha all fit). */
export interface TestApi {
  describe(name: string, body: () => void): unknown;
  it: {
    (name: string, fn: () => Promise<void>, timeout?: number): unknown;
    skip(name: string, fn: () => void): unknown;
  };
}

/**
 * Registers every conformance case for one store, under `describe('CheckpointStore conformance: <name>')`.
 * Skipped cases appear as skipped tests named `<case> [skipped — <capability>: <reason>]`.
 */
export function checkpointStoreConformance(name: string, ctx: ConformanceContext, api: TestApi): void {
  api.describe(`CheckpointStore conformance: ${name}`, () => {
    for (const testCase of conformanceCases) {
      const reason = skipReason(testCase, ctx);
      if (reason) api.it.skip(`${testCase.name} [skipped — ${reason}]`, () => {});
      else api.it(testCase.name, () => testCase.run(ctx), testCase.timeoutMs);
    }
  });
}
