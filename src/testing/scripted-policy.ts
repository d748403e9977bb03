import type { Action, Policy } from '../types.js';

/**
 * A policy that replays a fixed list of actions, one per policy call: the n-th step of the run
 * (`ctx.step`, which the run counts and keeps across resumes) gets the n-th action. So it
 * continues where it was after a resume, and a step whose entries the model no longer sees (a
 * compacted history) or that left no assistant turn (a malformed action) still counts. Past the
 * end it answers `{ final: 'script ended' }`. Called without a context (by hand, in a test), it
 * counts the assistant turns of the history it is given.
 *
 * @example
 * const policy = scriptedPolicy([{ tool: 'search', args: { q: 'refunds' } }, { final: 'done' }]);
 */
export function scriptedPolicy(actions: readonly Action[]): Policy {
  return (history, ctx) => {
    const step = ctx?.step;
    const turn =
      typeof step === 'number' && Number.isSafeInteger(step) && step >= 1
        ? step - 1
        : history.filter((e) => e.role === 'assistant' && !('content' in e)).length;
    return actions[turn] ?? { final: 'script ended' };
  };
}
