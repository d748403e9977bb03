import type { Action, Policy } from '../types.js';

/**
 * A policy that replays a fixed list of actions, one per call, chosen by how many assistant
 * turns the history already holds (so it continues correctly after a resume). Past the end it
 * answers `{ final: 'script ended' }`.
 *
 * @example
 * const policy = scriptedPolicy([{ tool: 'search', args: { q: 'refunds' } }, { final: 'done' }]);
 */
export function scriptedPolicy(actions: readonly Action[]): Policy {
  return (history) => {
    const turn = history.filter((e) => e.role === 'assistant').length;
    return actions[turn] ?? { final: 'script ended' };
  };
}
