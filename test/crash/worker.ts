/**
 * The crash test's child process: works the given runs until all are done, applying the
 * decisions its parent sends on stdin, reporting on stdout (one JSON event per line). The
 * parent SIGKILLs it at random moments and starts another; every start picks up from the
 * store. Two of these may work the same runs at once: the one whose save loses gets a
 * `ConflictError`, its agent stops, and it moves on. Run: `node --import tsx test/crash/worker.ts '<WorkerConfig JSON>'` (the test runs a
 * bundle of this file, which starts twice as fast).
 */
import { createInterface } from 'node:readline';
import {
  Agent,
  type CheckpointStore,
  ConflictError,
  LeaseLostError,
  NoPendingApprovalError,
  type Policy,
  RunBusyError,
  StaleApprovalError,
} from '../../src/index.js';
import { openWorld } from './ledger.js';
import {
  type DecisionMessage,
  GOAL,
  LEASE_MS,
  LIMITS,
  policy,
  toolsFor,
  type WorkerConfig,
  type WorkerEvent,
} from './scenario.js';

const config = JSON.parse(process.argv[2] ?? '') as WorkerConfig;
const world = await openWorld(config.world);
const emit = (event: WorkerEvent): void => {
  process.stdout.write(`${JSON.stringify(event)}\n`);
};
// Short leases: a killed worker's runs are taken over soon (the lease lapses), as in production
// with leaseMs of seconds; live workers renew theirs every third of it.
const options = {
  // Each policy call is reported before it is made, so the parent can hold it against the budget.
  policy: ((history, ctx) => {
    emit({ type: 'policy', runId: ctx.runId });
    return policy(history, ctx);
  }) satisfies Policy,
  tools: toolsFor(
    world,
    (tool, key) => emit({ type: 'effect', tool, key }),
    (callId) => emit({ type: 'paying', callId }),
  ),
  leaseMs: LEASE_MS,
  durability: config.durability,
};
// Every durable save is reported, so the parent can time kills by progress, not by the clock.
const store: CheckpointStore = {
  load: (runId) => world.store.load(runId),
  save: async (runId, write, expected, lease) => {
    const version = await world.store.save(runId, write, expected, lease);
    emit({ type: 'saved' });
    return version;
  },
  list: (o) => world.store.list(o),
  delete: (runId, expected, lease) => world.store.delete(runId, expected, lease),
  claim: (runId, o) => world.store.claim(runId, o),
  renew: (lease, ms) => world.store.renew(lease, ms),
  release: (lease) => world.store.release(lease),
  queueDecision: (runId, decision, expected) => world.store.queueDecision(runId, decision, expected),
  claimNext: (o) => world.store.claimNext(o),
  ...(world.store.watch ? { watch: (listener: () => void) => world.store.watch!(listener) } : {}),
  close: () => world.store.close(),
};
const decisions: DecisionMessage[] = [];
const busy = new Map<string, Promise<void>>();
/**
 * Runs another owner held at the last try, and when to try again: without a pause the loop would
 * claim them back to back (thousands of write transactions a second on SQLite), and a loaded
 * machine could then starve the other child's lease renewals past its lease.
 */
const heldElsewhere = new Map<string, number>();
const HELD_PAUSE_MS = 50;

/** What last happened to each run here, for the parent's dump of a hang. */
const lastSeen = new Map<string, string>();
const note = (runId: string, what: string): void => {
  lastSeen.set(runId, `${new Date().toISOString()} ${what}`);
};

createInterface({ input: process.stdin }).on('line', (line) => {
  if (!line.trim()) return;
  const message = JSON.parse(line) as DecisionMessage | { type: 'dump' };
  if ('type' in message) {
    emit({
      type: 'state',
      busy: [...busy.keys()],
      decisions: decisions.map((d) => `${d.runId}/${d.callId}`),
      lastSeen: Object.fromEntries(lastSeen),
    });
  } else decisions.push(message);
});

/** One piece of work on one run at a time: a run is never worked by two agents in this process. */
function spawn(runId: string, what: string, work: () => Promise<void>): void {
  note(runId, `${what}: started`);
  busy.set(
    runId,
    work()
      .then(() => note(runId, `${what}: ended`))
      .catch((error: unknown) => {
        note(runId, `${what}: ${String(error)}`);
        // The other process saved first: this agent has stopped, nothing ran; the next look
        // at the store decides what is left to do.
        if (error instanceof ConflictError) {
          const where = (error.stack ?? '').split('\n').slice(1, 6).join(' | ');
          return emit({ type: 'conflict', runId, detail: `${error.message} @ ${where}` });
        }
        // Another live worker holds the run, or took it over after this one's lease lapsed:
        // the run is its; this one called nothing after losing it.
        if (error instanceof RunBusyError || error instanceof LeaseLostError) {
          heldElsewhere.set(runId, Date.now() + HELD_PAUSE_MS);
          return emit({ type: error instanceof LeaseLostError ? 'lost' : 'busy', runId });
        }
        // Anything else is a failure of the test: say so and stop (exit code 2).
        process.stderr.write(`run ${runId}: ${(error as Error)?.stack ?? String(error)}\n`);
        process.exit(2);
      })
      .finally(() => busy.delete(runId)),
  );
}

async function advance(runId: string, status: string | undefined): Promise<void> {
  if (status === undefined) {
    try {
      await new Agent({ store: store, runId, ...options, ...LIMITS }).start(GOAL);
    } catch (error) {
      // The run was absent when this process listed the runs, and the other process created it
      // since (and released it at rest): this agent's first save — a creation — finds it there
      // and is refused before any call. Another owner has the run, as with RunBusyError. (A
      // conflict on a later save is optimistic concurrency too: a run loaded at rest holds no
      // lease until its next save. The parent notes those, with where they were thrown.)
      if (!(error instanceof ConflictError)) throw error;
      heldElsewhere.set(runId, Date.now() + HELD_PAUSE_MS);
      return emit({ type: 'busy', runId });
    }
  } else if (status === 'running') {
    await (await Agent.load(store, runId, options)).run();
  } else if (status !== 'awaiting_approval' && status !== 'done') {
    emit({ type: 'stuck', runId, status });
  }
}

async function decide(d: DecisionMessage): Promise<void> {
  let agent: Agent | null = null;
  try {
    agent = await Agent.load(store, d.runId, options);
    const status = await agent.decide(d.approved, d.note, { callId: d.callId, by: 'crash-test' });
    const stillPending = agent.state.pendingCalls.some((p) => p.id === d.callId);
    emit({ type: 'decided', runId: d.runId, callId: d.callId, approved: d.approved, status, stillPending });
  } catch (error) {
    // The other process holds the run for a moment (it is looking at it), or took it over: the
    // decision was not applied, and waits its turn. Dropped, it would leave the run waiting for
    // a human for ever (the parent decides each call once).
    if (error instanceof RunBusyError || error instanceof LeaseLostError) {
      note(d.runId, `decide ${d.callId}: ${error.message}`);
      decisions.push(d);
      heldElsewhere.set(d.runId, Date.now() + HELD_PAUSE_MS);
      return emit({ type: error instanceof LeaseLostError ? 'lost' : 'busy', runId: d.runId });
    }
    // Decided already: by the other process, or by an earlier child that died before the
    // parent heard of it.
    if (!(error instanceof StaleApprovalError || error instanceof NoPendingApprovalError)) throw error;
    emit({ type: 'stale', runId: d.runId, callId: d.callId, reason: error.name });
    // A run found `running` (its owner died mid-call) stays claimed by the agent that loaded it
    // until its lease lapses (it is renewed only once the run is worked): work it now, as the
    // loop would, rather than leave it held for a lease's length.
    if (agent?.status === 'running') await agent.run();
  }
}

// Ready once connected: the parent times its kill from here, so it lands amid the work.
await store.list({ limit: 1 });
emit({ type: 'ready' });
const stuck = new Set<string>();
for (;;) {
  // Each decision in turn once its run is free here and no longer held elsewhere at the last try
  // (a decision refused as busy is tried again after a pause, not back to back).
  for (const d of decisions.splice(0)) {
    if (busy.has(d.runId) || (heldElsewhere.get(d.runId) ?? 0) > Date.now()) decisions.push(d);
    else spawn(d.runId, `decide ${d.callId}`, () => decide(d));
  }
  // A run busy while the list is read may have changed since: leave it to the next round.
  const wasBusy = new Set(busy.keys());
  const status = new Map((await store.list()).map((r) => [r.runId, r.status]));
  // Finished when every run is done, or stuck in a status no one can resume (reported above).
  const over = (id: string) => status.get(id) === 'done' || stuck.has(id);
  if (config.runIds.every(over) && busy.size === 0 && decisions.length === 0) break;
  for (const runId of config.runIds) {
    const s = status.get(runId);
    if (wasBusy.has(runId) || busy.has(runId) || s === 'awaiting_approval' || s === 'done' || stuck.has(runId))
      continue;
    if ((heldElsewhere.get(runId) ?? 0) > Date.now()) continue;
    if (s !== undefined && s !== 'running') stuck.add(runId);
    spawn(runId, `advance from ${s ?? 'absent'}`, () => advance(runId, s));
  }
  await Promise.race([new Promise((resolve) => setTimeout(resolve, 5)), ...busy.values()]);
}
emit({ type: 'done' });
await world.close();
process.exit(0);
