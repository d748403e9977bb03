/**
 * Working one claimed run: load it under the lease the claim gave, and `run()` it until it
 * settles (awaiting a human, done, failed, out of budget, cancelled). The Agent renews the lease
 * while it works and releases it when the run settles.
 */
import type { Status } from '../../machines/types.js';
import { Agent } from '../agent.js';
import { type AgentDefinition, resumeOptionsOf } from '../define.js';
import type { CheckpointStore, Lease } from '../store/contract.js';
import type { TracerLike } from '../tracer.js';
import type { InspectOption } from '../types.js';

/** What working a claimed run came to. */
export interface Worked {
  status: Status;
  /** Whether anything was saved: false when the run had nothing to do after all. */
  progressed: boolean;
}

/**
 * Works the run `lease` is on, as `definition` says, with this worker's owner id, lease length,
 * inspector and tracer (when it has them, over the definition's own). On an error the lease is
 * not released: it lapses, so a run that fails every time (a damaged checkpoint, a store that
 * refuses it) is retried once per lease, never in a busy loop, while other runs go on.
 */
export async function workClaimed(
  store: CheckpointStore,
  lease: Lease,
  definition: AgentDefinition<any>,
  terms: { owner: string; leaseMs: number; inspect?: InspectOption; tracer?: TracerLike },
  signal?: AbortSignal,
): Promise<Worked> {
  const agent = await Agent.load(store, lease.runId, { ...resumeOptionsOf(definition), ...terms, lease });
  const before = agent.version;
  // Aborted when the worker stops without waiting: the run stops here as a crash would, before
  // its lease is given up, so nothing starts in this process after another worker may take it.
  const status = await agent.run(signal ? { signal } : {});
  return { status, progressed: agent.version !== before };
}
