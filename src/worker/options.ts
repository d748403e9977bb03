/**
 * The options of `new Worker`, defined once by their schema and checked up front as every options
 * object of Tollgate is (option-schema.ts): an unknown key is an error naming the one meant, a bad
 * value an error naming the option and value.
 */
import { z } from 'zod';
import { type Clock, systemClock } from '../clock.js';
import type { AgentDefinition } from '../define.js';
import { checkedApart, checkOptions, clockSchema, must, type OptionShape, timerMs } from '../option-schema.js';
import { parseResumeOptions, runtimeShape } from '../options.js';
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

const MAX_CONCURRENCY = 1_000;

const workerShape = {
  // Checked apart (checks.ts), for errors that name the methods or the definition that is wrong.
  store: checkedApart,
  agents: checkedApart,
  concurrency: must(`a whole number from 1 to ${MAX_CONCURRENCY}`, (e) =>
    z.number(e).int(e).min(1, e).max(MAX_CONCURRENCY, e),
  ).optional(),
  owner: runtimeShape.owner,
  leaseMs: runtimeShape.leaseMs,
  pollMs: timerMs().optional(),
  clock: clockSchema.optional(),
  inspect: runtimeShape.inspect,
  tracer: runtimeShape.tracer,
} satisfies OptionShape<WorkerOptions>;

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
  checkOptions(call, options, workerShape);
  checkQueueStore(call, options.store);
  const agents = definitionsByName(call, options.agents);
  const { concurrency = 4, pollMs = 1_000, clock = systemClock } = options;
  // The Agent's defaults for the lease terms, inspector and tracer of every run.
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
