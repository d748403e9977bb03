/**
 * What the policy and tool actors are handed: ports onto their run, never the Agent. The actors
 * are provided to the machine once per process (host.ts); each actor system (one per run actor)
 * is registered here with its ports, and an actor finds them by its system.
 */
import type { HistoryEntry, StepCall } from '../../machines/types.js';
import { SystemError } from '../errors.js';
import type { Runtime } from '../options.js';
import type { PolicyDelta } from '../types.js';
import type { GroupPort } from './budget-group.js';
import type { Remaining } from './limits.js';
import type { Span } from './tracing.js';

export interface ActorPorts extends Runtime {
  runId: string;
  /** The live history (entries are frozen; the array is copied for the policy). */
  history(): readonly HistoryEntry[];
  /** What the policy is given: the model's view of the history (a fresh array; machines/compaction.ts). */
  view(): HistoryEntry[];
  /** The calls of the step in progress, as the run holds them now. */
  calls(): readonly StepCall[];
  /** The run's approval TTL (ms), or null: approvals never expire. */
  approvalTtlMs(): number | null;
  /** The budgets left as the run stands now (before the call about to be made). */
  remaining(): Remaining;
  /**
   * Awaited before every policy call, and before a tool call that must be on record first (a
   * side effect, an approved call): with a store, the run as it is now (the call in flight
   * included) is saved first. The write-ahead point; a writer that lost its place (a conflict,
   * a lost lease) stops here, before calling anything. `point` (default true): durable in every
   * mode; false: relaxed under `durability: 'points'`.
   */
  beforeCall(point?: boolean): Promise<void>;
  /**
   * The fencing token a side effect starts under, confirmed by the store by a statement sent at or
   * after `since` (monotonic ms: the call's write-ahead save, or a renewal made now) with enough of
   * the lease left; null without a store. When it cannot be confirmed the run stops in this
   * process (as after a failed save) and this throws: the call must not start.
   */
  fence(since: number): Promise<number | null>;
  /** The same check again, synchronously, right before the effect starts. */
  fenceNow(): number | null;
  /** The run's current fencing token, unconfirmed (for calls that change nothing); null without a store. */
  token(): number | null;
  /**
   * True once for each key that was in flight in the checkpoint the run was resumed from: a
   * non-idempotent side effect among them is not called again (its outcome is unknown).
   */
  takeRecovered(key: string): boolean;
  /** Reports a streaming policy's progress on step `step` to the run's observers. */
  delta(step: number, delta: PolicyDelta): void;
  /** The span of the run's drive in progress, which parents the policy and tool calls' spans; null: none. */
  runSpan(): Span | null;
  /** The run's group budget in the store (held before, settled after each model call); null: no group. */
  group(): GroupPort | null;
}

const registry = new WeakMap<object, ActorPorts>();

/** Registers the ports of one actor system. */
export function registerPorts(system: object, ports: ActorPorts): void {
  registry.set(system, ports);
}

/** The ports of the run an actor works for. */
export function portsOf(system: object): ActorPorts {
  const ports = registry.get(system);
  if (!ports) throw new SystemError('an actor ran outside of its run');
  return ports;
}
