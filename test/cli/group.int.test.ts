/** `--budget-group` on `tollgate run` and `submit`: the run spends from its group's budget in the store. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/stores/sqlite.js';
import { fixture, workspace } from './workspace.js';

describe('--budget-group', () => {
  it('puts the run in its group: a spent group stops it (stoppedBy group), and a bad id is a usage error', async () => {
    const { cli, dir } = workspace();
    const store = SqliteStore.open(join(dir, 'tollgate.db'));
    try {
      await store.setGroupBudget('acme', { maxCostUsd: 1 });
    } finally {
      await store.close();
    }
    // loop-agent reports no usage: its first call's cost cannot be known, and fills the group's limit.
    const run = await cli([
      'run',
      fixture('loop-agent.mjs'),
      'think',
      '--run-id',
      'g1',
      '--budget-group',
      'acme',
      '--json',
    ]);
    expect(run.code).toBe(4);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'budget_exhausted', stoppedBy: 'group', steps: 1 });
    const submit = await cli([
      'submit',
      fixture('loop-agent.mjs'),
      'think',
      '--run-id',
      'g2',
      '--budget-group',
      'acme',
    ]);
    expect(submit.code).toBe(0);
    const check = SqliteStore.open(join(dir, 'tollgate.db'));
    try {
      expect(await check.groupOf('g1')).toBe('acme');
      expect(await check.groupOf('g2')).toBe('acme');
      expect(await check.groupSpend('acme')).toMatchObject({ costUsd: 1, exhausted: 'cost' });
    } finally {
      await check.close();
    }
    const bad = await cli(['run', fixture('loop-agent.mjs'), 'think', '--budget-group', 'no way']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('budgetGroup must be a group id');
  });
});
