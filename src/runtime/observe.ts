/**
 * `agent.observe`: reports a run's progress from its snapshots — each history entry as it is
 * appended, each policy and tool call as it starts, each change of status. A listener that throws
 * is ignored: an observer never breaks the run it observes.
 */
import { runningCalls } from '../../machines/calls.js';
import type { AgentContext, CompactionState, HistoryEntry, Status } from '../../machines/types.js';
import type { PolicyDelta, RunEvent } from '../types.js';

/** What has been reported so far. */
interface Seen {
  entries: number;
  /** The step whose policy call was last reported. */
  deciding: number | null;
  /** The keys of the calls in flight when last reported (each reported as executing once). */
  running: readonly string[];
  status: Status | null;
  /** Compaction's record as last reported (by value). */
  compaction: string | null;
}

/** Compaction's record by value; null for a context without one (made by hand, as in unit tests). */
const compactionKey = (c: CompactionState | undefined) =>
  c === undefined ? null : `${c.failures}|${c.retryAt}|${c.error}`;

export class Observers {
  readonly #listeners = new Set<(event: RunEvent) => void>();
  #seen: Seen | null = null;

  get active(): boolean {
    return this.#listeners.size > 0;
  }

  /** Adds a listener; reports what happens from the run as it is now. */
  add(listener: (event: RunEvent) => void, context: AgentContext, status: Status, deciding: boolean): () => void {
    if (this.#listeners.size === 0) {
      this.#seen = {
        entries: context.history.length,
        deciding: deciding ? context.steps + 1 : null,
        running: runningCalls(context.calls).map((c) => c.key),
        status,
        compaction: compactionKey(context.compaction),
      };
    }
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** A streaming policy's delta: passed on as it is (a copy), never recorded. */
  delta(step: number, delta: PolicyDelta): void {
    if (this.#listeners.size === 0) return;
    let copy: PolicyDelta;
    try {
      copy = structuredClone(delta);
    } catch {
      return; // not data: dropped, the policy's own business
    }
    this.#emit([{ type: 'delta', step, delta: copy }]);
  }

  notify(context: AgentContext, status: Status, deciding: boolean): void {
    if (this.#listeners.size === 0) return;
    const seen = this.#seen ?? { entries: 0, deciding: null, running: [], status: null, compaction: null };
    const events: RunEvent[] = [];
    for (let i = seen.entries; i < context.history.length; i++) {
      events.push({ type: 'entry', index: i, entry: structuredClone(context.history[i] as HistoryEntry) });
    }
    const step = deciding ? context.steps + 1 : null;
    if (step !== null && step !== seen.deciding) events.push({ type: 'deciding', step });
    const running = runningCalls(context.calls);
    for (const { key, tool, args, step } of running) {
      if (!seen.running.includes(key))
        events.push({ type: 'executing', call: structuredClone({ key, tool, args, step }) });
    }
    // A failed summary changes no entry: observers hear of it (and of the count reset) here.
    const compaction = compactionKey(context.compaction);
    if (seen.compaction !== null && compaction !== null && compaction !== seen.compaction) {
      events.push({ type: 'compaction', compaction: structuredClone(context.compaction) });
    }
    // A status event on a change of status only, not on every phase of `running`.
    if (status !== seen.status) events.push({ type: 'status', status });
    this.#seen = {
      entries: context.history.length,
      deciding: step,
      running: running.map((c) => c.key),
      status,
      compaction,
    };
    this.#emit(events);
  }

  #emit(events: readonly RunEvent[]): void {
    for (const event of events) {
      for (const listener of this.#listeners) {
        try {
          listener(event);
        } catch {
          // An observer must never break the run it observes.
        }
      }
    }
  }
}
