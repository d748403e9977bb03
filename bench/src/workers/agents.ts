/**
 * The pool bench's agents, defined alike in the parent (which submits runs and records
 * decisions, never running a call) and in each worker process (which runs them).
 */
import { defineAgent, type Policy, type Tool } from 'tollgate';

/** Tool calls per run of the `steps` agent: the run then answers (its 11th policy call). */
export const STEPS = 10;
/** What the `steps` agent's tool waits, as a call to a service would. */
export const TOOL_MS = 5;

export interface AgentHooks {
  /** Called as `pay` or `fetch` is entered (not `work`: 10,000 lines would be measured too). */
  onCall?: (tool: string, key: string) => void;
  /** How long `fetch` hangs: the take-over bench's victim hangs, the survivor does not. */
  hangMs?: number;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((done) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      done();
    });
  });

const callsSoFar = (history: readonly unknown[]) => (history.length - 1) / 2;

export function benchAgents({ onCall = () => {}, hangMs = 0 }: AgentHooks = {}) {
  const steps: Policy = (history) =>
    callsSoFar(history) < STEPS ? { tool: 'work', args: { i: callsSoFar(history) } } : { final: 'worked' };
  const work: Tool = {
    name: 'work',
    fn: async (args: { i: number }) => {
      await sleep(TOOL_MS);
      return { i: args.i, ok: true };
    },
  };
  const pay: Tool = {
    name: 'pay',
    sideEffect: true,
    fn: (_args, key) => {
      onCall('pay', key);
      return { paid: true };
    },
  };
  // Pure: a worker taking over a dead worker's run simply calls it again.
  const fetch: Tool = {
    name: 'fetch',
    fn: async (_args, key, ctx) => {
      onCall('fetch', key);
      await sleep(hangMs, ctx.signal);
      return { fetched: true };
    },
  };
  return [
    defineAgent({ name: 'steps', policy: steps, tools: [work], maxSteps: STEPS + 2 }),
    defineAgent({
      name: 'payer',
      policy: (history) => (history.length === 1 ? { tool: 'pay', args: { cents: 100 } } : { final: 'paid' }),
      tools: [pay],
      maxSteps: 3,
    }),
    defineAgent({
      name: 'fetcher',
      policy: (history) => (history.length === 1 ? { tool: 'fetch', args: {} } : { final: 'fetched' }),
      tools: [fetch],
      maxSteps: 3,
    }),
  ];
}
