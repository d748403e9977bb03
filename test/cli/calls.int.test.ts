/**
 * The CLI with several calls pending in one step (issue 12): every pending call is shown with the
 * commands that decide it; `approve` without `--call-id` is refused while several wait; an
 * approved call runs once the calls before it in its step have their outcome.
 */
import { describe, expect, it } from 'vitest';
import { callIdOf } from '../../machines/index.js';
import { fixture, workspace } from './workspace.js';

describe('tollgate with several pending calls', () => {
  it('lists each call with its decide-later commands, and decides them one by one by id', async () => {
    const { cli, paid } = workspace();
    const run = await cli(['run', fixture('split-agent.mjs'), 'pay both', '--run-id', 's2', '--no-input']);
    expect(run.code).toBe(3);
    const first = callIdOf('s2:1.1', 1, 'pay', { amount: 10 });
    const second = callIdOf('s2:1.2', 1, 'pay', { amount: 20 });
    for (const id of [first, second])
      expect(run.stdout).toContain(`npx --no-install tollgate approve s2 --call-id '${id}'`);

    const ambiguous = await cli(['approve', 's2', '--no-input']);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain('2 calls are pending');
    expect(paid()).toEqual([]);

    // The second call is approved, but waits: calls take effect in their order, and the first is undecided.
    const one = await cli(['approve', 's2', '--call-id', second, '--no-input']);
    expect(one.code).toBe(3);
    expect(paid()).toEqual([]);
    const show = await cli(['show', 's2']);
    expect(show.stdout).toContain(`call id   ${first}`);
    expect(show.stdout).not.toContain(`call id   ${second}`);

    const two = await cli(['deny', 's2', '--call-id', first, '--note', 'paid already', '--no-input']);
    expect(two.code).toBe(0);
    expect(paid()).toEqual(['s2:1.2 20']);
  });
});
