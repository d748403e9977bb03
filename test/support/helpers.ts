import { expect } from 'vitest';
import { resumedHead } from '../../src/checkpoint/index.js';
import type { Action, CheckpointStore, HistoryEntry, Policy, Tool } from '../../src/index.js';
import { crashableStore } from '../../src/testing/crashable-store.js';

/** A policy that returns the given actions in order, whatever the history says. */
export function sequence(...actions: unknown[]): Policy & { calls: HistoryEntry[][] } {
  const calls: HistoryEntry[][] = [];
  const policy = ((history: HistoryEntry[]) => {
    calls.push(history);
    return actions[Math.min(calls.length - 1, actions.length - 1)] as Action;
  }) as unknown as Policy & { calls: HistoryEntry[][] };
  policy.calls = calls;
  return policy;
}

/** A tool that records its calls and returns `result` (or what `fn` says). */
export function recorder(name: string, extra: Partial<Tool> = {}, fn: (args: any) => unknown = () => 'ok') {
  const calls: { args: any; key: string }[] = [];
  const tool: Tool = {
    name,
    ...extra,
    fn: (args, key) => {
      calls.push({ args, key });
      return fn(args);
    },
  };
  return { tool, calls };
}

/** A promise with its resolve/reject exposed, to hold a call in flight. */
export function gate<T = unknown>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Waits until `check` holds, yielding to the event loop (no timers). */
export async function until(check: () => boolean, tries = 1000): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (check()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error('condition never held');
}

export const last = <T>(xs: readonly T[]): T | undefined => xs[xs.length - 1];

/** Matches a pending call id `<key>#<attempt>@<digest of tool and args>` with the given `<key>#<attempt>`. */
export function idLike(keyAndAttempt: string) {
  const escaped = keyAndAttempt.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return expect.stringMatching(new RegExp(`^${escaped}@[0-9a-f]{32}$`));
}

/** A store as a process that dies sees it (`crashableStore` of tollgate/testing), with `die` for `crash`. */
export function mortal<S extends CheckpointStore>(store: S): { store: CheckpointStore; die: () => void } {
  const { store: seen, crash } = crashableStore(store);
  return { store: seen, die: crash };
}

/**
 * The compact head a stored run holds, as text: its head, joined with its base when the head is
 * a delta (a store that keeps bases writes most heads so). What a test reads a stored state from.
 */
export function wholeHead(record: { head: string; base?: string | null } | null | undefined): string {
  if (!record) return '';
  return resumedHead(record.head, record.base).head;
}
