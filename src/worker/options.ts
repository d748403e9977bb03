/**
 * The options of `new Worker`, checked up front as every options object of Tollgate is: an
 * unknown key is an error naming the one meant, a bad value an error naming the option and value.
 */
import { type Clock, MAX_TIMER_MS, systemClock } from '../clock.js';
import type { AgentDefinition } from '../define.js';
import { OptionsError } from '../errors.js';
import { checkKeys, showValue } from '../option-keys.js';
import { parseResumeOptions } from '../options.js';
import type { CheckpointStore } from '../store/contract.js';
import type { TracerLike } from '../tracer.js';
import type { InspectOption } from '../types.js';
import { checkQueueStore, definitionsByName } from './checks.js';

/** Options of `new Worker`. */
export interface WorkerOptions {
  /** The store the runs live in (every worker of a pool shares it). */
  store: CheckpointStore;
  /** The agents this worker may run, as `defineAgent` makes them; it takes only their runs. */
  agents: readonly AgentDefinition<any>[];
  /** Runs worked at once. @default 4 */
  concurrency?: number;
  /** This worker's owner id on its leases. @default host:pid:random */
  owner?: string;
  /** The lease on each run it works (renewed every third of it). @default 30_000 */
  leaseMs?: number;
  /** How often it looks for runnable runs when nothing wakes it (a store's `watch` does). @default 1_000 */
  pollMs?: number;
  /** The clock its polls wait on (not the runs' clock: each definition has its own). @default systemClock */
  clock?: Clock;
  /**
   * Passed to XState's `createActor` of every run it works (in place of its definition's): an
   * inspector (`@statelyai/inspect`'s `inspector.inspect`, or any function or observer of
   * inspection events) sees each run's live machine. @default the definition's, if any
   */
  inspect?: InspectOption;
  /**
   * An OpenTelemetry tracer for every run it works (in place of its definition's): each drive, policy
   * call and tool call is a span (docs/observability.md). @default the definition's, if any
   */
  tracer?: TracerLike;
}

const WORKER_KEYS = ['store', 'agents', 'concurrency', 'owner', 'leaseMs', 'pollMs', 'clock', 'inspect', 'tracer'];
const MAX_CONCURRENCY = 1_000;

/** A worker's options, checked, with defaults. */
export interface WorkerSettings {
  store: CheckpointStore;
  agents: Map<string, AgentDefinition<any>>;
  concurrency: number;
  pollMs: number;
  clock: Clock;
  owner: string;
  leaseMs: number;
  /** The inspector and tracer given to every run worked, over the definitions' own. */
  runOptions: { inspect?: InspectOption; tracer?: TracerLike };
}

/** Checks the options of `new Worker`. @throws OptionsError naming the option and the bad value. */
export function parseWorkerOptions(options: WorkerOptions): WorkerSettings {
  const call = 'new Worker';
  checkKeys(call, options, WORKER_KEYS);
  checkQueueStore(call, options.store);
  const agents = definitionsByName(call, options.agents);
  const { concurrency = 4, pollMs = 1_000, clock = systemClock } = options;
  if (!Number.isSafeInteger(concurrency) || concurrency < 1 || concurrency > MAX_CONCURRENCY) {
    throw new OptionsError(
      `${call}: concurrency must be a whole number from 1 to ${MAX_CONCURRENCY}, got ${showValue(concurrency)}`,
    );
  }
  if (typeof pollMs !== 'number' || !(pollMs > 0) || pollMs > MAX_TIMER_MS) {
    throw new OptionsError(
      `${call}: pollMs must be a number of milliseconds > 0 and ≤ ${MAX_TIMER_MS}, got ${showValue(pollMs)}`,
    );
  }
  if (
    clock === null ||
    typeof clock !== 'object' ||
    typeof clock.now !== 'function' ||
    typeof clock.sleep !== 'function'
  ) {
    throw new OptionsError(`${call}: clock must be an object with now() and sleep(), got ${showValue(clock)}`);
  }
  // The Agent's own checks (and messages) for the lease terms, inspector and tracer of every run.
  const { owner, leaseMs, inspect, tracer } = options;
  const { runtime } = parseResumeOptions(
    {
      policy: () => ({ final: '' }),
      tools: [],
      ...(owner === undefined ? {} : { owner }),
      ...(leaseMs === undefined ? {} : { leaseMs }),
      ...(inspect === undefined ? {} : { inspect }),
      ...(tracer === undefined ? {} : { tracer }),
    },
    call,
  );
  return {
    store: options.store,
    agents,
    concurrency,
    pollMs,
    clock,
    owner: runtime.lease.owner,
    leaseMs: runtime.lease.leaseMs,
    runOptions: {
      ...(runtime.inspect === undefined ? {} : { inspect: runtime.inspect }),
      ...(runtime.tracer === undefined ? {} : { tracer: runtime.tracer }),
    },
  };
}
