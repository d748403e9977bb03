/**
 * The runtime machine: the pure agent machine with the real policy and tool actors and the O(1)
 * history append, provided once per process (`provide()` costs ~0.3 ms: not once per run).
 */
import { agentMachine, historyActions } from '../../machines/agent-machine.js';
import { appendInPlace } from '../../machines/history.js';
import { policyActor } from './policy-actor.js';
import { toolActor } from './tool-actor.js';

/**
 * The machine every run actor is made from. Its snapshots are read once each (the saver and the
 * observers copy what they keep), so the history can grow in place: O(1) per step, not the pure
 * machine's O(history) copy.
 */
export const runtimeMachine = agentMachine.provide({
  actors: { policy: policyActor, tool: toolActor },
  actions: historyActions(appendInPlace),
});

export type RuntimeMachine = typeof runtimeMachine;
