/**
 * The runtime machine: the pure agent machine with the real policy and tool actors and the O(1)
 * history append, provided once per process (`provide()` is costly: not once per run; docs/performance.md).
 */
import { agentMachine, historyActions, summaryDueWhen } from '../../machines/agent-machine.js';
import { appendInPlace } from '../../machines/history.js';
import { type Compaction, compactionDue } from '../compaction.js';
import { policyActor } from './policy-actor.js';
import { summaryActor } from './summary-actor.js';
import { toolActor } from './tool-actor.js';
import { toolsActor } from './tools-actor.js';

/**
 * The machine every run actor is made from. Its snapshots are read once each (the saver and the
 * observers copy what they keep), so the history can grow in place: O(1) per step, not the pure
 * machine's O(history) copy.
 */
export const runtimeMachine = agentMachine.provide({
  actors: { policy: policyActor, tool: toolActor, tools: toolsActor, summarize: summaryActor },
  actions: historyActions(appendInPlace),
});

export type RuntimeMachine = typeof runtimeMachine;

/**
 * The machine of a run with a `compaction` option: the runtime machine with the guard that says
 * when to summarise. Provided per run (the guard holds the run's option), once for each option
 * object; a run without the option uses `runtimeMachine` itself.
 */
const compacting = new WeakMap<Compaction, RuntimeMachine>();
export function machineFor(compaction: Compaction | null): RuntimeMachine {
  if (compaction === null) return runtimeMachine;
  let machine = compacting.get(compaction);
  if (!machine) {
    machine = runtimeMachine.provide({
      guards: { summaryDue: summaryDueWhen((context) => compactionDue(compaction, context)) },
    }) as RuntimeMachine;
    compacting.set(compaction, machine);
  }
  return machine;
}
