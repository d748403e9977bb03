/**
 * Runs paused for approval, for the inbox's tests: a `desk` agent whose side effects go to a
 * ledger (what a worker really ran), and a helper that starts runs until they pause.
 */
import { z } from 'zod';
import { Agent, agentOptionsOf, type CheckpointStore, defineAgent, type Policy, type Tool } from '../../src/index.js';

/** What the tools ran: `${key} ${tool} ${JSON args}`. */
export type Ledger = string[];

/**
 * The `desk` agent. Its first step comes from the goal: `refund <order> <cents>` asks for one
 * refund; `refund+email <order> <cents>` asks for a refund and an email together (two calls).
 * Any step after the tools ran answers `finished`.
 */
export function deskAgent(ledger: Ledger, options: { approvalTtlMs?: number } = {}) {
  const refund: Tool = {
    name: 'refund',
    description: 'Refund an order, in cents',
    input: z.object({
      order: z.string(),
      cents: z.number().int().positive().max(100_000),
      memo: z.string().optional(),
    }),
    sideEffect: true,
    fn: (args, key) => {
      ledger.push(`${key} refund ${JSON.stringify(args)}`);
      return { refunded: args.cents };
    },
  };
  const email: Tool = {
    name: 'email',
    description: 'Email a customer',
    input: z.object({ to: z.string(), subject: z.string() }),
    sideEffect: true,
    fn: (args, key) => {
      ledger.push(`${key} email ${JSON.stringify(args)}`);
      return { sent: true };
    },
  };
  const policy: Policy = (history) => {
    if (history.some((e) => e.role === 'tool')) return { final: 'finished' };
    const goal = (history[0] as { content: string }).content;
    const [verb = '', order = 'A-1', cents = '100'] = goal.split(' ');
    const refundCall = { tool: 'refund', args: { order, cents: Number(cents), memo: goal } };
    if (verb === 'refund+email') {
      return { calls: [refundCall, { tool: 'email', args: { to: 'ana@example.com', subject: `About ${order}` } }] };
    }
    return refundCall;
  };
  return defineAgent({
    name: 'desk',
    policy,
    tools: [refund, email],
    maxSteps: 4,
    ...(options.approvalTtlMs === undefined ? {} : { approvalTtlMs: options.approvalTtlMs }),
  });
}

/** Starts a run of `agent` with `goal` and lets it pause for approval; returns the run id. */
export async function pausedRun(
  store: CheckpointStore,
  agent: ReturnType<typeof deskAgent>,
  runId: string,
  goal: string,
): Promise<string> {
  const run = new Agent({ ...agentOptionsOf(agent), store, runId });
  const status = await run.start(goal);
  if (status !== 'awaiting_approval') throw new Error(`run ${runId} is ${status}, not awaiting approval`);
  return runId;
}

/** A token long enough for the inbox. */
export const TOKENS = { dana: 'dana-token-0123456789abcdef', lee: 'lee-token-0123456789abcdef' };

/**
 * A run whose approved refund was in flight when its process died: taken up again after its
 * lease lapsed (on `clock`, the store's), it awaits approval with the call's outcome unknown.
 */
export async function crashedRun(store: CheckpointStore, clock: { advance(ms: number): void }, runId: string) {
  let started = false;
  const hanging: Tool = {
    name: 'refund',
    sideEffect: true,
    fn: () => {
      started = true;
      return new Promise(() => {}); // the process dies before it ends
    },
  };
  const policy: Policy = (history) =>
    history.some((e) => e.role === 'tool')
      ? { final: 'finished' }
      : { tool: 'refund', args: { order: 'A-9', cents: 900 } };
  const dying = defineAgent({ name: 'desk', policy, tools: [hanging], maxSteps: 4 });
  const first = new Agent({ ...agentOptionsOf(dying), store, runId });
  await first.start('refund A-9 900');
  // It never answers; when its lease is found lost later, that is the dead process's, not the test's.
  first.decide(true, 'ok').catch(() => {});
  for (let i = 0; i < 200 && !started; i++) await new Promise((r) => setTimeout(r, 5));
  if (!started) throw new Error('the refund never started');
  clock.advance(60_000); // the dead process's lease lapses
  const again = await Agent.load(store, runId, { policy, tools: [hanging], agent: 'desk' });
  return again.run();
}
