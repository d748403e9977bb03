/**
 * A naive XState v5 loop, as a team would first write one: the policy and the tool as invoked
 * promise actors, the history appended immutably in context, and the actor's persisted snapshot
 * serialised and kept after every step (every snapshot change). "Bytes" are those snapshots.
 */
import { assign, createActor, fromPromise, setup } from 'xstate';
import { ANSWER, type CheckpointTimes, type Contestant, GOAL, nextAction, toolResult } from '../workload.js';

type Entry = Record<string, unknown>;
type Action = ReturnType<typeof nextAction>;

const machine = setup({
  types: {
    context: {} as { history: Entry[]; steps: number; answer: unknown },
    input: {} as { steps: number },
  },
  actors: {
    policy: fromPromise<Action, { history: Entry[]; steps: number }>(async ({ input }) =>
      nextAction((input.history.length - 1) / 2, input.steps),
    ),
    tool: fromPromise<unknown, { n: number }>(async ({ input }) => toolResult(input.n)),
  },
}).createMachine({
  context: ({ input }) => ({ history: [{ role: 'user', content: GOAL }], steps: input.steps, answer: null }),
  initial: 'deciding',
  states: {
    deciding: {
      invoke: {
        src: 'policy',
        input: ({ context }) => ({ history: context.history, steps: context.steps }),
        onDone: [
          {
            guard: ({ event }) => 'final' in event.output,
            target: 'done',
            actions: assign(({ context, event }) => {
              const final = (event.output as { final: string }).final;
              return { answer: final, history: [...context.history, { role: 'assistant', final }] };
            }),
          },
          {
            target: 'executing',
            actions: assign(({ context, event }) => {
              const { tool, args } = event.output as { tool: string; args: { n: number } };
              return { history: [...context.history, { role: 'assistant', tool, args }] };
            }),
          },
        ],
      },
    },
    executing: {
      invoke: {
        src: 'tool',
        input: ({ context }) => (context.history.at(-1) as { args: { n: number } }).args,
        onDone: {
          target: 'deciding',
          actions: assign(({ context, event }) => ({
            history: [...context.history, { role: 'tool', tool: 'echo', result: event.output as never }],
          })),
        },
      },
    },
    done: { type: 'final' },
  },
});

async function runMachine(steps: number, keep: ((blob: string) => void) | null) {
  const actor = createActor(machine, { input: { steps } });
  const done = new Promise<void>((resolve, reject) => {
    actor.subscribe({
      next: (snapshot) => {
        if (keep) keep(JSON.stringify(actor.getPersistedSnapshot()));
        if (snapshot.status === 'done') resolve();
      },
      error: reject,
    });
  });
  actor.start();
  await done;
  const { answer, history } = actor.getSnapshot().context;
  if (answer !== ANSWER || history.length !== 2 * steps + 2) throw new Error('xstate: wrong run');
  return actor;
}

export function naiveXState(): Contestant {
  return {
    name: 'naive XState loop',
    persists: 'the persisted snapshot after every step, in memory',
    async run(steps) {
      let bytes = 0;
      let saved = '';
      await runMachine(steps, (blob) => {
        bytes += blob.length;
        saved = blob;
      });
      return { bytes: saved ? bytes : 0 };
    },
    async checkpoint(steps): Promise<CheckpointTimes> {
      const actor = await runMachine(steps, null);
      let t = performance.now();
      const blob = JSON.stringify(actor.getPersistedSnapshot());
      const saveMs = performance.now() - t;
      t = performance.now();
      const again = createActor(machine, { snapshot: JSON.parse(blob), input: { steps } });
      const loadMs = performance.now() - t;
      if (again.getSnapshot().status !== 'done') throw new Error('xstate: restore');
      return { saveMs, loadMs, bytes: blob.length };
    },
  };
}
