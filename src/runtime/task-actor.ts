/**
 * A promise actor like XState's `fromPromise` whose abort signal is made only when something
 * reads it. `fromPromise` makes an `AbortController` for every policy and tool call (an
 * `EventTarget` with its maps, and its garbage: a measurable share of a step in memory,
 * docs/performance.md), while most tools and many policies never read their signal. The
 * snapshots, events and stop are `fromPromise`'s (test/task-actor.test.ts holds the two side by
 * side): done with the promise's value, error with its reason, on stop the signal aborted (or
 * made aborted, if it is read afterwards) and the promise's settling ignored, and a restored
 * snapshot still `active` started again (the write-ahead rule relies on it). One difference: the
 * task's result reaches the actor by `self.send` (XState's own logic uses an internal relay that
 * names the actor as the event's source to an inspector).
 */
import type { ActorSystem, AnyActorRef, PromiseActorLogic, PromiseSnapshot } from 'xstate';

/** A call's abort signal, made when first read; `aborted` never makes it. */
export class CallAbort {
  #controller: AbortController | null = null;
  #stopped = false;

  /** The call was stopped (its actor was). */
  get aborted(): boolean {
    return this.#stopped;
  }

  /** The signal handed to the policy or tool: aborted when the call is stopped. */
  get signal(): AbortSignal {
    if (this.#controller === null) {
      this.#controller = new AbortController();
      if (this.#stopped) this.#controller.abort();
    }
    return this.#controller.signal;
  }

  /** Stops the call: its signal aborts (with the reason `AbortController.abort()` gives). */
  abort(): void {
    this.#stopped = true;
    this.#controller?.abort();
  }
}

/** What the task is given: `fromPromise`'s arguments, with `abort` in place of `signal`. */
export interface TaskArgs<TInput> {
  input: TInput;
  /** XState's `AnyActorSystem`, which it does not export. */
  system: ActorSystem<any>;
  self: AnyActorRef;
  abort: CallAbort;
}

const RESOLVE = 'tollgate.task.resolve';
const REJECT = 'tollgate.task.reject';
/** XState's stop event, sent to an actor's logic when it is stopped. */
const STOP = 'xstate.stop';

/** Each running task's abort, by actor (as `fromPromise` keeps its controllers). */
const aborts = new WeakMap<AnyActorRef, CallAbort>();

/** Promise actor logic for `task`, as `fromPromise(task)` makes it but for the lazy signal. */
export function fromTask<TOutput, TInput>(
  task: (args: TaskArgs<TInput>) => PromiseLike<TOutput>,
): PromiseActorLogic<TOutput, TInput> {
  return {
    config: task,
    transition: (state, event, scope): PromiseSnapshot<TOutput, TInput> => {
      if (state.status !== 'active') return state;
      switch (event.type) {
        case RESOLVE:
          return { ...state, status: 'done', output: event.data as TOutput, input: undefined };
        case REJECT:
          return { ...state, status: 'error', error: event.data, input: undefined };
        case STOP:
          aborts.get(scope.self)?.abort();
          aborts.delete(scope.self);
          return { ...state, status: 'stopped', input: undefined };
        default:
          return state;
      }
    },
    start: (state, { self, system }) => {
      if (state.status !== 'active') return;
      const abort = new CallAbort();
      aborts.set(self, abort);
      const settle = (type: string) => (data: unknown) => {
        // Stopped meanwhile: what the task gives is nobody's.
        if (self.getSnapshot().status !== 'active') return;
        aborts.delete(self);
        self.send({ type, data });
      };
      Promise.resolve(task({ input: state.input as TInput, system, self, abort })).then(
        settle(RESOLVE),
        settle(REJECT),
      );
    },
    getInitialSnapshot: (_, input) =>
      ({ status: 'active', output: undefined, error: undefined, input }) as PromiseSnapshot<TOutput, TInput>,
    getPersistedSnapshot: (snapshot) => snapshot,
    restoreSnapshot: (snapshot) => snapshot as PromiseSnapshot<TOutput, TInput>,
  };
}
