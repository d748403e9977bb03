/**
 * A store as a process that dies sees it, for crash tests inside one process: after `crash()`,
 * nothing the process does reaches the store any more.
 */
import type { CheckpointStore } from '../store/contract.js';

/** What `crashableStore` returns: give `store` to the agent that is to die, and call `crash()` in the middle of anything. */
export interface CrashableStore<S extends CheckpointStore> {
  store: S;
  /** From now on every call of the store through `store` hangs, never settling (`close` still closes). */
  crash(): void;
}

/**
 * The same store, seen through a process that can die. Once `crash()` is called (from a tool's
 * `fn`, a policy, an approval rule: at any await), every later call through `store` hangs, as
 * it would in a killed process: nothing more of the run is saved, and its lease is not renewed,
 * so it lapses after `leaseMs` on the store's clock. Another agent on the original store then
 * loads the run (`Agent.load` with a `leaseWaitMs` longer than the dead agent's `leaseMs`) and
 * continues it under the crash rules. Give the dying agent a short `leaseMs`.
 *
 * @example
 * const dying = crashableStore(store);
 * const tool = { name: 'pay', idempotent: true, fn: () => { dying.crash(); return new Promise(() => {}); } };
 * void new Agent({ policy, tools: [tool], store: dying.store, runId: 'r', leaseMs: 100 }).start('pay').catch(() => {});
 * const next = await Agent.load(store, 'r', { policy, tools: [tool], leaseWaitMs: 2_000 });
 */
export function crashableStore<S extends CheckpointStore>(store: S): CrashableStore<S> {
  let crashed = false;
  const never = new Promise<never>(() => {});
  const seen = new Proxy(store, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      if (property === 'close') return value.bind(target);
      return (...args: unknown[]) => (crashed ? never : value.apply(target, args));
    },
  });
  return {
    store: seen,
    crash: () => {
      crashed = true;
    },
  };
}
