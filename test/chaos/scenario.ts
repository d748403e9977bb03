/**
 * What every chaos run does, the agent definition the worker processes, the approver and the
 * parent share, and the messages the children print (one JSON object a line).
 *
 * A run asks, one policy call a step: a pure `lookup`; a `pay` (a non-idempotent side effect with a
 * `verify` that looks its key up downstream, editable); in one step `ship` (idempotent) and
 * `notify` (non-idempotent, no `verify`, not editable); another `lookup`; then its answer. Every
 * policy call reports 2,000 + 1,500 tokens of model `m`: $0.01 at `PRICE`, priced in advance, so
 * group holds are exact. Calls are slow at random (now and then for most of a lease), so that
 * kills and pauses land inside them.
 */
import { z } from 'zod';
import { type AgentDefinition, defineAgent, type Policy, type Tool } from '../../src/index.js';
import type { Downstream } from './downstream.js';

export const AGENT = 'chaos';
export const PRICE = { m: { inputUsdPerMTok: 2, outputUsdPerMTok: 4 } };
export const USAGE = { inputTokens: 2_000, outputTokens: 1_500, model: 'm' };
/** What each policy call costs at `PRICE`. */
export const CALL_USD = 0.01;
/** Policy calls a run makes to its answer. */
export const STEPS = 5;

/** What a worker process prints. */
export type WorkerEvent =
  | { type: 'ready' }
  | { type: 'call'; tool: string; key: string }
  | { type: 'called'; tool: string; key: string; accepted: boolean }
  | { type: 'verify'; key: string; answer: 'done' | 'notDone' }
  | { type: 'error'; runId: string | null; error: string }
  | { type: 'settled'; runId: string; status: string }
  /** It stopped itself right after a save, as asked (`at`: its clock, just before the SIGSTOP). */
  | { type: 'frozen'; at: number }
  /** It claimed a run: the lease's token (`at`: once the store answered). */
  | { type: 'lease'; runId: string; token: number; at: number }
  /** It asks a hold on the run's group (`at`: as it sends it). */
  | { type: 'hold'; runId: string; group: string; token: number; costMicroUsd: number; at: number }
  /** It settles a call's charge with the group (`at`: as it sends it). */
  | { type: 'charge'; runId: string; group: string; token: number; costMicroUsd: number; at: number };

/** What the approver prints: each decision once `recordDecision` took it. */
export type ApproverEvent =
  | { type: 'ready' }
  | {
      type: 'decided';
      runId: string;
      callId: string;
      key: string;
      tool: string;
      attempt: number;
      unknown: boolean;
      approve: boolean;
      /** The arguments the call runs with once approved: the edit, else the model's. */
      args: Record<string, unknown>;
      edited: boolean;
      note: string;
    }
  /** A call decided earlier is pending again with no decision recorded: a worker dropped it. */
  | { type: 'dropped'; runId: string; callId: string }
  /** `recordDecision` refused for now (`RunBusyError`, `ConflictError`): tried again at the next look. */
  | { type: 'retry'; runId: string; error: string }
  | { type: 'refused'; runId: string; error: string };

/** What the tools do around their effects, in a worker process. */
export interface Effects {
  downstream: Downstream;
  emit(event: WorkerEvent): void;
  /** 0…1, the worker's seeded generator. */
  rng(): number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The amount a run's model asks to pay, from its id: runs differ, and a rerun of a seed pays the same. */
function centsOf(runId: string): number {
  let h = 0;
  for (const c of runId) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return 100 + (h % 900);
}

/**
 * The definition, with tools that act through `effects` (in a worker) or that must never be
 * called (in the parent and the approver, which only submit and decide).
 * @param leaseMs the workers' lease: a slow call lasts up to most of it.
 */
export function chaosAgent(effects: Effects | null, leaseMs: number): AgentDefinition {
  const rng = effects?.rng ?? Math.random;
  /** Usually short; a `share` of the calls take 40–90% of a lease (renewed meanwhile). */
  const slow = (short: number, share = 0.125) => (rng() < share ? leaseMs * (0.4 + rng() * 0.5) : rng() * short);

  /**
   * A side effect: the slow part first (the request on its way), then the downstream write, fenced.
   * Payments are slow more often, so that faults land in them and their `verify` is asked.
   */
  const effect =
    (tool: string, slowShare: number) =>
    async (args: Record<string, unknown>, key: string, ctx: Parameters<Tool['fn']>[2]): Promise<unknown> => {
      if (!effects) throw new Error(`${tool} called outside a worker`);
      const startedAt = Date.now();
      effects.emit({ type: 'call', tool, key });
      await sleep(slow(150, slowShare));
      const accepted = await effects.downstream.attempt({
        tool,
        runId: ctx.runId,
        key,
        callId: ctx.approvedCallId,
        fence: ctx.fence,
        pid: process.pid,
        args: args as never,
        startedAt,
      });
      effects.emit({ type: 'called', tool, key, accepted });
      if (!accepted) throw new Error(`${tool} refused downstream: fencing token ${ctx.fence} is stale`);
      await sleep(rng() * 60); // done downstream, the result not yet recorded
      return { [tool]: 'ok', key, ...args };
    };

  const tools: Tool[] = [
    {
      name: 'lookup',
      fn: async ({ what }: { what: string }) => {
        await sleep(rng() * 40);
        return { found: what };
      },
    },
    {
      name: 'pay',
      sideEffect: true,
      input: z.object({ cents: z.number().int().positive() }),
      fn: effect('pay', 0.3),
      verify: async ({ key, fence }) => {
        if (!effects) throw new Error('verify called outside a worker');
        const found = await effects.downstream.lookup(key, fence);
        effects.emit({ type: 'verify', key, answer: found ? 'done' : 'notDone' });
        return found ? { done: { pay: 'ok', key, ...found.args } } : { notDone: true };
      },
    },
    { name: 'ship', sideEffect: true, idempotent: true, fn: effect('ship', 0.125) },
    { name: 'notify', sideEffect: true, allowEdit: false, fn: effect('notify', 0.125) },
  ];

  const policy: Policy = async (history, ctx) => {
    await sleep(slow(60));
    const turn = history.filter((e) => e.role === 'assistant').length;
    const usage = USAGE;
    switch (turn) {
      case 0:
        return { tool: 'lookup', args: { what: 'order' }, usage };
      case 1:
        return { tool: 'pay', args: { cents: centsOf(ctx.runId) }, usage };
      case 2:
        return {
          calls: [
            { tool: 'ship', args: { to: 'depot' } },
            { tool: 'notify', args: { to: 'customer' } },
          ],
          usage,
        };
      case 3:
        return { tool: 'lookup', args: { what: 'receipt' }, usage };
      default:
        return { final: 'paid, shipped and told', usage };
    }
  };

  return defineAgent({ name: AGENT, policy, tools, price: PRICE, maxSteps: STEPS + 1 });
}
