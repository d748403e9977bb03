import type { Status } from '../../machines/types.js';
import type { AgentDefinition } from '../define.js';
import { RunBusyError } from '../errors.js';
import { checkedApart, checkOptions, type OptionShape } from '../option-schema.js';
import { parseResumeOptions, runtimeShape } from '../options.js';
import { claimRun } from '../runtime/lease.js';
import type { CheckpointStore } from '../store/contract.js';
import { checkQueueStore, definitionsByName } from './checks.js';
import { workClaimed } from './work.js';

/** Options of `expireDue`. */
export interface ExpireOptions {
  /** The agents whose runs are worked (by `defineAgent` name); others are left alone. */
  agents: readonly AgentDefinition<any>[];
  /** The owner id on the leases. @default host:pid:random */
  owner?: string;
  /** The lease length while a run is worked. @default 30_000 */
  leaseMs?: number;
}

const expireShape = {
  // Checked apart (checks.ts), for errors that name the definition that is wrong.
  agents: checkedApart,
  owner: runtimeShape.owner,
  leaseMs: runtimeShape.leaseMs,
} satisfies OptionShape<ExpireOptions>;

/** One run `expireDue` took up: the status it settled in, or the error that stopped it. */
export type ExpiredRun = { runId: string; status: Status } | { runId: string; error: unknown };

/**
 * Works every run of `agents` whose approvals expired (by the store's clock; the run's agent
 * applies what has expired by its own clock). A run another owner holds is skipped: its owner
 * sees the expiry. Errors of one run do not stop the others.
 * @returns each run taken up, in the order it was.
 * @throws OptionsError on a bad option (nothing is claimed).
 *
 * @example
 * // every minute, from a scheduler: expired approvals reach the model as "approval expired"
 * for (const r of await expireDue(store, { agents: [support] })) if ('error' in r) log(r.runId, r.error);
 */
export async function expireDue(store: CheckpointStore, options: ExpireOptions): Promise<ExpiredRun[]> {
  const call = 'expireDue';
  checkQueueStore(call, store);
  checkOptions(call, options, expireShape);
  const byName = definitionsByName(call, options.agents);
  // The Agent's defaults for owner and leaseMs.
  const { lease: terms } = parseResumeOptions(
    {
      policy: () => ({ final: '' }),
      tools: [],
      ...(options.owner === undefined ? {} : { owner: options.owner }),
      ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
    },
    call,
  ).runtime;
  const { owner, leaseMs } = terms;
  const out: ExpiredRun[] = [];
  for (const [name, definition] of byName) {
    const due = await store.list({ status: 'awaiting_approval', expired: true, agent: name });
    for (const { runId } of due) {
      let lease: Awaited<ReturnType<CheckpointStore['claim']>>;
      try {
        lease = await claimRun(store, runId, { owner, leaseMs, waitMs: 0 }); // a dead holder's lease is released
      } catch (error) {
        if (error instanceof RunBusyError) continue;
        out.push({ runId, error });
        continue;
      }
      try {
        const { status } = await workClaimed(store, lease, definition, { owner, leaseMs });
        out.push({ runId, status });
      } catch (error) {
        out.push({ runId, error });
      }
    }
  }
  return out;
}
