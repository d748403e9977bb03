/**
 * A naive XState v5 loop, as a team would first write one: the policy and the tool as invoked
 * promise actors, the history appended immutably in context, and the actor's persisted snapshot
 * serialised and kept after every step (every snapshot change). "Bytes" are those snapshots.
 *
 * The bare loop is the same machine persisting nothing and appending to the history in place (no
 * O(N) copy per step): the floor of a design whose policy and tool calls are invoked actors.
 */
import { assign, createActor, fromPromise, setup } from 'xstate';
import { ANSWER, type CheckpointTimes, type Contestant, GOAL, nextAction, timeLoads, toolResult } from '../workload.js';

type Entry = Record<string, unknown>;
type Action = ReturnType<typeof nextAction>;

/** Appends entries to the history: a new array (immutable), or the same one grown in place. */
type Append = (history: Entry[], ...entries: Entry[]) => Entry[];
const copying: Append = (history, ...entries) => [...history, ...entries];
const inPlace: Append = (history, ...entries) => {
  history.push(...entries);
  return history;
};

const build = (append: Append) =>
  setup({
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
                return { answer: final, history: append(context.history, { role: 'assistant', final }) };
              }),
            },
            {
              target: 'executing',
              actions: assign(({ context, event }) => {
                const { tool, args } = event.output as { tool: string; args: { n: number } };
                return { history: append(context.history, { role: 'assistant', tool, args }) };
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
              history: append(context.history, { role: 'tool', tool: 'echo', result: event.output as never }),
            })),
          },
        },
      },
      done: { type: 'final' },
    },
  });

const machine = build(copying);
const bareMachine = build(inPlace);

async function runMachine(steps: number, keep: ((blob: string) => void) | null, bare = false) {
  const actor = createActor(bare ? bareMachine : machine, { input: { steps } });
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
      const t = performance.now();
      const blob = JSON.stringify(actor.getPersistedSnapshot());
      const saveMs = performance.now() - t;
      const loadMs = await timeLoads(
        () => createActor(machine, { snapshot: JSON.parse(blob), input: { steps } }),
        (again) => {
          if (again.getSnapshot().status !== 'done') throw new Error('xstate: restore');
        },
      );
      return { saveMs, loadMs, bytes: blob.length };
    },
  };
}

export const BARE_XSTATE = 'bare XState loop (two invokes)';

/** The same machine, persisting nothing, the history grown in place: this design's floor. */
export function bareXState(): Contestant {
  return {
    name: BARE_XSTATE,
    persists: 'nothing (the history appended in place)',
    async run(steps) {
      await runMachine(steps, null, true);
      return { bytes: null };
    },
  };
}
