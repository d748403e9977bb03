/**
 * `submitRun`: stores a run for a worker to start, calling nothing in the caller's process.
 *
 * The run's first durable state is the one every run has just before its first policy call: the
 * write-ahead record "running, policy call in flight". Loading such a run makes that call (a
 * policy call is safe to make again), so a worker that claims it simply continues it. The state
 * is built by starting the run's machine with a policy port that is never reached (the actor is
 * stopped at its write-ahead point), and saved under a lease that is released at once.
 */
import { randomUUID } from 'node:crypto';
import { createActor } from 'xstate';
import type { Limits, Message } from '../../machines/types.js';
import { untilAborted } from '../abort.js';
import { type AgentDefinition, agentOptionsOf } from '../define.js';
import { ConflictError, SystemError } from '../errors.js';
import { startEvent } from '../messages.js';
import { checkedApart, checkOptions, type OptionShape } from '../option-schema.js';
import { parseAgentOptions, parseLimits, runShape } from '../options.js';
import { runtimeMachine } from '../runtime/host.js';
import { remainingOf } from '../runtime/limits.js';
import { registerPorts } from '../runtime/ports.js';
import { viewOf } from '../runtime/run-actor.js';
import { storeNewRun } from '../runtime/saver.js';
import type { CheckpointStore } from '../store/contract.js';
import { checkDefinition, checkQueueStore } from './checks.js';

/** What `submitRun` stores. */
export interface SubmitOptions {
  /** The agent definition (`defineAgent`) whose workers run it; its name is saved with the run. */
  agent: AgentDefinition<any>;
  /**
   * The user's goal (the run's first history entry), or the conversation the run starts from, as
   * `agent.start` takes it: system messages first, the last message the user's.
   */
  goal: string | readonly Message[];
  /** The run's id. @default a fresh UUID */
  runId?: string;
  /** Limits replacing the definition's for this run (`maxSteps`, `maxTokens`, `maxActiveMs`, `maxCostUsd`). @default the definition's */
  limits?: Partial<Limits>;
  /** The run's budget group (a tenant, a user), as `new Agent`'s `budgetGroup`; the store must have group budgets. @default none */
  budgetGroup?: string;
  /**
   * Aborting it stops the call: it rejects with the signal's reason. Aborted before the run was
   * saved, nothing is stored; while it was being saved, the run may have been stored (as after a
   * crash): `store.load(runId)` tells, and a worker starts it as any other. @default none
   */
  signal?: AbortSignal;
}

const submitShape = {
  // Checked apart: the definition (checks.ts), and the rest as the Agent's own options.
  agent: checkedApart,
  goal: checkedApart,
  runId: checkedApart,
  limits: checkedApart,
  budgetGroup: checkedApart,
  signal: runShape.signal,
} satisfies OptionShape<SubmitOptions>;

/**
 * Stores a new run of `options.agent` with `options.goal`, for a `Worker` given that definition
 * to start. Nothing is called here: not the policy, not a tool.
 * @returns the run's id.
 * @throws OptionsError on a bad argument (nothing is stored).
 * @throws ConflictError if the store already has a run with this id.
 *
 * @example
 * const runId = await submitRun(store, { agent: support, goal: 'refund order 42' });
 */
export async function submitRun(store: CheckpointStore, options: SubmitOptions): Promise<string> {
  const call = 'submitRun';
  checkQueueStore(call, store);
  checkOptions(call, options, submitShape);
  checkDefinition(call, 'agent', options.agent);
  const start = startEvent(call, options.goal);
  const limits = options.limits === undefined ? {} : parseLimits(options.limits, `${call}: limits`);
  const parsed = parseAgentOptions(
    {
      ...agentOptionsOf(options.agent),
      ...limits,
      ...(options.runId === undefined ? {} : { runId: options.runId }),
      ...(options.budgetGroup === undefined ? {} : { budgetGroup: options.budgetGroup, store }),
    },
    call,
  );
  const { signal } = options;
  signal?.throwIfAborted();
  const runId = parsed.runId ?? randomUUID();
  if (await untilAborted(signal, store.load(runId))) {
    throw new ConflictError(`${call}: the store already has a run ${JSON.stringify(runId)}`, 0, null, { runId });
  }
  const input = { runId, limits: parsed.limits, approvalTtlMs: parsed.approvalTtlMs };
  const actor = createActor(runtimeMachine, { input });
  registerPorts(actor.system, {
    ...parsed.runtime,
    runId,
    history: () => actor.getSnapshot().context.history,
    // A run holding its goal alone has nothing to summarise: it stops before its first policy call.
    view: () => actor.getSnapshot().context.history.slice(),
    remaining: () => remainingOf(actor.getSnapshot().context),
    calls: () => actor.getSnapshot().context.calls,
    approvalTtlMs: () => parsed.approvalTtlMs,
    fence: async () => null,
    fenceNow: () => null,
    token: () => null,
    group: () => null,
    // The write-ahead point of the first policy call: the run stops here, before any call.
    beforeCall: () => new Promise<void>(() => {}),
    takeRecovered: () => false,
    delta: () => {},
    runSpan: () => null,
  });
  let failure: unknown;
  actor.subscribe({ error: (error) => (failure ??= error) });
  actor.start();
  actor.send(start);
  const view = viewOf(actor.getSnapshot());
  actor.stop();
  if (failure !== undefined || view?.status !== 'running') {
    throw new SystemError(`${call}: the run could not be started (${String(failure ?? view?.status)})`, { runId });
  }
  signal?.throwIfAborted();
  await untilAborted(
    signal,
    storeNewRun(store, {
      runId,
      view,
      agent: options.agent.name,
      group: parsed.budgetGroup,
      lease: parsed.runtime.lease,
    }),
  );
  return runId;
}
