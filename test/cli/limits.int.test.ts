/**
 * A run's limits are the run's own: continuing it with its agent module (approve, deny, resume)
 * never resets them to the module's; only an explicit --max-steps / --max-tokens / --max-active-ms does.
 */
import { describe, expect, it } from 'vitest';
import { fixture, workspace } from './workspace.js';

const limitsOf = async (cli: ReturnType<typeof workspace>['cli'], runId: string) =>
  JSON.parse((await cli(['show', runId, '--json'])).stdout).limits;

describe('run limits across processes', () => {
  it('approve keeps the step budget the run was started with (--max-steps 2 of a module saying 6)', async () => {
    const { cli, paid } = workspace();
    const run = await cli(['run', fixture('pay-agent.mjs'), 'pay', '--run-id', 'l1', '--max-steps', '2']);
    expect(run.code).toBe(3);
    expect(run.stdout).toContain('steps 2/2');
    const approve = await cli(['approve', 'l1', '--json']);
    // The approved call runs; the policy may not be asked a third time.
    expect(paid()).toEqual(['l1:2 250']);
    expect(approve.code).toBe(4);
    expect(JSON.parse(approve.stdout)).toMatchObject({ status: 'budget_exhausted', steps: 2, stoppedBy: 'steps' });
    expect(await limitsOf(cli, 'l1')).toEqual({ maxSteps: 2, maxTokens: null, maxActiveMs: null, maxCostUsd: null });

    // resume without limits keeps them too; with --max-steps it raises them and finishes.
    expect((await cli(['resume', 'l1'])).code).toBe(4);
    expect(await limitsOf(cli, 'l1')).toMatchObject({ maxSteps: 2 });
    const more = await cli(['resume', 'l1', '--max-steps', '3', '--json']);
    expect(more.code).toBe(0);
    expect(JSON.parse(more.stdout)).toMatchObject({ status: 'done', steps: 3, answer: 'paid' });
    expect(await limitsOf(cli, 'l1')).toMatchObject({ maxSteps: 3 });
  });

  it('deny keeps them too, and approve/deny --max-steps replace them with the decision', async () => {
    const { cli } = workspace();
    expect((await cli(['run', fixture('pay-agent.mjs'), 'pay', '--run-id', 'l2', '--max-steps', '2'])).code).toBe(3);
    const deny = await cli(['deny', 'l2', '--note', 'no', '--json']);
    expect(deny.code).toBe(4);
    expect(JSON.parse(deny.stdout)).toMatchObject({ steps: 2, stoppedBy: 'steps' });

    expect((await cli(['run', fixture('pay-agent.mjs'), 'pay', '--run-id', 'l3', '--max-steps', '2'])).code).toBe(3);
    const approve = await cli(['approve', 'l3', '--max-steps', '5', '--json']);
    expect(approve.code).toBe(0);
    expect(JSON.parse(approve.stdout)).toMatchObject({ status: 'done', steps: 3 });
    expect(await limitsOf(cli, 'l3')).toMatchObject({ maxSteps: 5 });
  });

  it("--max-tokens and --max-active-ms set a new run's budgets; resume refuses limits it could not save", async () => {
    const { cli } = workspace();
    const args = [
      'run',
      fixture('pay-agent.mjs'),
      'pay',
      '--run-id',
      'l4',
      '--max-tokens',
      '900',
      '--max-active-ms',
      '60000',
    ];
    expect((await cli(args)).code).toBe(3);
    expect(await limitsOf(cli, 'l4')).toEqual({ maxSteps: 6, maxTokens: 900, maxActiveMs: 60000, maxCostUsd: null });
    // Waiting for a human, a resume does no work that would save new limits: refused, unchanged.
    const resume = await cli(['resume', 'l4', '--max-tokens', '5']);
    expect(resume.code).toBe(2);
    expect(resume.stderr).toMatch(/awaiting approval: give the new limits to tollgate approve or deny/);
    expect(await limitsOf(cli, 'l4')).toMatchObject({ maxTokens: 900 });
    for (const bad of [
      ['--max-tokens', '-1'],
      ['--max-active-ms', 'soon'],
      ['--max-steps', ''],
    ]) {
      const r = await cli(['run', fixture('pay-agent.mjs'), 'pay', ...bad]);
      expect(r.code, bad.join(' ')).toBe(2);
      expect(r.stderr).toContain('expected a whole number');
    }
  });

  it('--max-cost-usd sets a cost budget; a module whose calls have no price stops at once (fail closed)', async () => {
    const { cli, paid } = workspace();
    // pay-agent's policy reports no usage: its first call's cost cannot be known.
    const run = await cli(['run', fixture('pay-agent.mjs'), 'pay', '--run-id', 'l5', '--max-cost-usd', '2.50']);
    expect(run.code).toBe(4);
    expect(run.stdout).toContain('cost $2.5/$2.5');
    expect(await limitsOf(cli, 'l5')).toEqual({ maxSteps: 6, maxTokens: null, maxActiveMs: null, maxCostUsd: 2.5 });
    const show = JSON.parse((await cli(['show', 'l5', '--json'])).stdout);
    expect(show).toMatchObject({ stoppedBy: 'cost', error: 'cost unknown: the policy reported no usage' });
    // Raised: one more call (the payment, which waits for a human), whose cost is unknown again.
    const more = await cli(['resume', 'l5', '--max-cost-usd', '5', '--json']);
    expect(more.code).toBe(3);
    expect(JSON.parse(more.stdout)).toMatchObject({ status: 'awaiting_approval', steps: 2, usage: { costUsd: 5 } });
    // Approved, the payment runs; the policy is not asked again: the budget is spent.
    const approve = await cli(['approve', 'l5', '--json']);
    expect(approve.code).toBe(4);
    expect(JSON.parse(approve.stdout)).toMatchObject({ status: 'budget_exhausted', steps: 2, stoppedBy: 'cost' });
    expect(paid()).toEqual(['l5:2 250']);
    for (const bad of ['-1', '0', 'lots', '1e3', '']) {
      const r = await cli(['run', fixture('pay-agent.mjs'), 'pay', '--max-cost-usd', bad]);
      expect(r.code, bad).toBe(2);
      expect(r.stderr).toContain('expected a number of US dollars > 0');
    }
  });
});
