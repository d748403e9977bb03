/**
 * `submitMessage`: the user's next message to a stored run, for a worker to answer. Nothing is
 * called in the caller's process: not the policy, not a summariser, not a tool.
 *
 * The run takes the message as `agent.send` takes it, under a lease this call holds: the message
 * is saved with the run's new turn, up to the write-ahead record of its first policy call
 * ("running, policy call in flight"). There the policy this call gives the agent stops it, as a
 * crash at that point would, and the lease is released: a worker claims the run as any running
 * run and makes that call. A run whose budget allows no policy call takes the message and stops
 * there (`budget_exhausted`), as `send` would.
 */
import type { Status } from '../../machines/types.js';
import { untilAborted } from '../abort.js';
import { Agent } from '../agent.js';
import { type AgentDefinition, resumeOptionsOf } from '../define.js';
import { OptionsError, RunNotFoundError } from '../errors.js';
import { checkedApart, checkOptions, type OptionShape, text } from '../option-schema.js';
import { DEFAULT_LEASE_MS, ownerId, runIdSchema, runShape } from '../options.js';
import { thisProcess } from '../process-identity.js';
import type { CheckpointStore } from '../store/contract.js';
import type { Policy } from '../types.js';
import { checkDefinition, checkQueueStore } from './checks.js';

/** What `submitMessage` sends. */
export interface SubmitMessageOptions {
  /** The run's agent definition (`defineAgent`), as its workers have it. */
  agent: AgentDefinition<any>;
  /** The stored run: one that answered (`done`) or that a budget stopped. */
  runId: string;
  /** The user's next message. */
  message: string;
  /**
   * Aborting it stops the call: it rejects with the signal's reason. Aborted before the run was
   * saved, the message is not taken; while it was being saved, it may have been (as after a
   * crash): `store.load(runId)` tells. @default none
   */
  signal?: AbortSignal;
}

const messageShape = {
  agent: checkedApart,
  runId: runIdSchema,
  message: text('a string'),
  signal: runShape.signal,
} satisfies OptionShape<SubmitMessageOptions>;

/** The policy's stop: the reason this call's own signal aborts with. */
const PARKED = Symbol('parked at the policy call');

/**
 * Gives a stored run the user's next message, for a worker to answer (docs/workers.md).
 * @returns the status the run is left in: `running` (a worker answers it) or `budget_exhausted`.
 * @throws OptionsError on a bad argument, or a run of another agent (nothing is saved).
 * @throws RunNotFoundError if the store has no such run.
 * @throws RunStateError unless the run is `done` or `budget_exhausted` (nothing is saved).
 * @throws RunBusyError while another process holds the run.
 *
 * @example
 * await submitMessage(store, { agent: support, runId: 'ticket-42', message: 'and for order 43?' });
 */
export async function submitMessage(store: CheckpointStore, options: SubmitMessageOptions): Promise<Status> {
  const call = 'submitMessage';
  checkQueueStore(call, store);
  const { runId, message, signal } = checkOptions(call, options, messageShape);
  checkDefinition(call, 'agent', options.agent);
  signal?.throwIfAborted();
  // No summary in this process: the worker's first step summarises if one is due.
  const { compaction: _compaction, ...resume } = resumeOptionsOf(options.agent);
  const owner = options.agent.owner ?? ownerId();
  const leaseMs = options.agent.leaseMs ?? DEFAULT_LEASE_MS;
  // The run must be the definition's: a save under another name would hand it to other workers.
  const stored = await untilAborted(signal, store.load(runId));
  if (!stored) throw new RunNotFoundError(`${call}: no run ${JSON.stringify(runId)} in the store`, { runId });
  if (stored.agent !== options.agent.name) {
    throw new OptionsError(
      `${call}: run ${JSON.stringify(runId)} is of agent ${JSON.stringify(stored.agent)}, not ${JSON.stringify(options.agent.name)}`,
      { runId },
    );
  }
  const lease = await store.claim(runId, { owner, leaseMs, process: thisProcess(), ...(signal ? { signal } : {}) });
  const stop = new AbortController();
  const forward = () => stop.abort(signal?.reason);
  signal?.addEventListener('abort', forward, { once: true });
  const parked: Policy = () => {
    stop.abort(PARKED);
    return new Promise<never>(() => {});
  };
  try {
    signal?.throwIfAborted();
    const agent = await Agent.load(store, runId, {
      ...resume,
      owner,
      leaseMs,
      policy: parked,
      durability: 'full',
      lease,
      signal: stop.signal,
    });
    return await agent.send(message, { signal: stop.signal });
  } catch (error) {
    if (error === PARKED) return 'running';
    throw error;
  } finally {
    signal?.removeEventListener('abort', forward);
    // The agent gives the lease up as it settles or stops; given up here too, and waited for, so
    // a worker can claim the run as soon as this returns (a second release changes nothing).
    await store.release(lease).catch(() => false);
  }
}
