/**
 * Tollgate's own machine (`tollgate/machine`) with instant actors: the decisions and tool outcomes
 * a real run of the same length made, replayed by invoked promise actors that do nothing else,
 * and the history grown in place as the runtime grows it. What is left is the machine itself —
 * its states, guards and assigns (budgets, call records, write-ahead records) — so its cost per
 * step, against the bare two-invoke loop, is the floor the runtime cannot go under without
 * changing the machine. Not a user's setup: a measurement of where a step's time goes.
 */
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Agent } from 'tollgate';
import { agentMachine, appendInPlace, historyActions } from 'tollgate/machine';
import { MACHINE } from '../report.js';
import { ANSWER, type Contestant } from '../workload.js';
import { policyFor, tools } from './tollgate.js';

/** The xstate Tollgate itself resolves (the bench has its own copy): actors and machine from one. */
async function tollgateXState(): Promise<typeof import('xstate')> {
  const require = createRequire(import.meta.url);
  const from = dirname(require.resolve('tollgate'));
  return import(pathToFileURL(createRequire(`${from}/`).resolve('xstate')).href);
}

interface Replay {
  policy: unknown[];
  tool: unknown[];
}

/** The actors' outputs of a real run of `steps` steps, in order (from XState's inspection events). */
async function record(steps: number): Promise<Replay> {
  const replay: Replay = { policy: [], tool: [] };
  const agent = new Agent({
    runId: `machine-record-${steps}`,
    policy: policyFor(steps),
    tools,
    maxSteps: steps + 1,
    inspect: (event) => {
      if (event.type !== '@xstate.event') return;
      const { type, output } = event.event as { type: string; output?: unknown };
      if (type === 'xstate.done.actor.policy') replay.policy.push(output);
      if (type === 'xstate.done.actor.tool') replay.tool.push(output);
    },
  });
  if ((await agent.start('run the benchmark')) !== 'done') throw new Error('machine: the recorded run did not finish');
  if (replay.policy.length !== steps + 1 || replay.tool.length !== steps) {
    throw new Error(`machine: recorded ${replay.policy.length} decisions and ${replay.tool.length} outcomes`);
  }
  return replay;
}

export function tollgateMachine(): Contestant {
  const replays = new Map<number, Replay>();
  let xstate: typeof import('xstate') | null = null;
  const run = async (steps: number, runId: string) => {
    const { createActor, fromPromise } = xstate as typeof import('xstate');
    let replay = replays.get(steps);
    if (!replay) {
      replay = await record(steps);
      replays.set(steps, replay);
    }
    const { policy, tool } = replay;
    let p = 0;
    let t = 0;
    const machine = agentMachine.provide({
      actors: {
        policy: fromPromise(async () => policy[p++]) as never,
        tool: fromPromise(async () => tool[t++]) as never,
      },
      actions: historyActions(appendInPlace),
    });
    const actor = createActor(machine, {
      input: {
        runId,
        limits: { maxSteps: steps + 1, maxTokens: null, maxActiveMs: null, maxCostUsd: null },
        approvalTtlMs: null,
      },
    });
    const done = new Promise<void>((resolve, reject) => {
      actor.subscribe({
        next: (snapshot) => {
          if (snapshot.value === 'done') resolve();
        },
        error: reject,
      });
    });
    actor.start();
    actor.send({ type: 'START', goal: 'run the benchmark' });
    await done;
    const { answer, history } = actor.getSnapshot().context;
    actor.stop();
    if (answer !== ANSWER || history.length !== 2 * steps + 2) throw new Error('machine: wrong run');
  };
  return {
    name: MACHINE,
    persists: 'nothing (the recorded decisions and outcomes of a real run replayed by instant actors)',
    async setup() {
      xstate = await tollgateXState();
    },
    async run(steps, runId) {
      await run(steps, runId);
      return { bytes: null };
    },
  };
}
