/**
 * The real, built `tollgate` command in child processes: output, exit codes and the store's
 * contents. Non-interactive here (no terminal); tmux.int.test.ts drives the prompts.
 */

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { callIdOf } from '../../machines/index.js';
import { fixture, workspace } from './workspace.js';

describe('tollgate (built) in child processes', () => {
  it('--help works for the program and every command', async () => {
    const { cli } = workspace();
    const top = await cli(['--help']);
    expect(top.code).toBe(0);
    for (const command of [
      'run',
      'runs',
      'show',
      'approve',
      'deny',
      'resume',
      'send',
      'replay',
      'fork',
      'check',
      'cancel',
      'export',
      'import',
      'machine',
      'submit',
      'worker',
      'serve',
    ]) {
      expect(top.stdout).toContain(command);
      const help = await cli([command, '--help']);
      expect(help.code, command).toBe(0);
      expect(help.stdout).toContain(`Usage: tollgate ${command}`);
    }
  });

  it('run pauses for approval, prints the command to decide later and exits 3; approve in another process finishes it', async () => {
    const { cli, paid, stored, dir } = workspace();
    const run = await cli(['run', fixture('pay-agent.mjs'), 'pay invoice 7', '--run-id', 'inv-7']);
    expect(run.code).toBe(3);
    expect(run.stdout).toContain('call      pay {"amount":250}');
    expect(run.stdout).toContain('approval needed');
    expect(run.stdout).toContain('key       inv-7:2');
    expect(run.stdout).toContain(
      `npx --no-install tollgate approve inv-7 --call-id '${callIdOf('inv-7:2', 1, 'pay', { amount: 250 })}' --store ${dir}/tollgate.db --agent ${fixture('pay-agent.mjs')} --note`,
    );
    expect(paid()).toEqual([]);
    expect(await stored('inv-7')).toMatchObject({ status: 'awaiting_approval', pending: { key: 'inv-7:2' } });

    const inbox = await cli(['runs', '--status', 'awaiting_approval', '--json']);
    expect(inbox.code).toBe(0);
    expect(JSON.parse(inbox.stdout)).toEqual([
      expect.objectContaining({ runId: 'inv-7', pending: expect.objectContaining({ tool: 'pay' }) }),
    ]);

    const stale = await cli(['approve', 'inv-7', '--call-id', 'inv-7:1#1']);
    expect(stale.code).toBe(2);
    expect(stale.stderr.trim().split('\n')).toHaveLength(1);
    expect(stale.stderr).toContain('is not the pending call');
    expect(paid()).toEqual([]);

    const callId = callIdOf('inv-7:2', 1, 'pay', { amount: 250 });
    const approve = await cli(['approve', 'inv-7', '--note', 'budgeted', '--as', 'carol', '--call-id', callId]);
    expect(approve.code).toBe(0);
    expect(approve.stdout).toContain('(approved by carol)');
    expect(approve.stdout).toContain('answer    paid');
    expect(paid()).toEqual(['inv-7:2 250']);
    const record = await stored('inv-7');
    expect(record?.status).toBe('done');
    expect(record?.entries.some((e) => e.includes('"by":"carol"') && e.includes('"note":"budgeted"'))).toBe(true);

    const again = await cli(['approve', 'inv-7']);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('no call awaits approval');
    expect(paid()).toHaveLength(1);
  });

  it('send goes on from a run that answered with the next message: a new turn, saved; refused while it awaits approval', async () => {
    const { cli, paid, stored } = workspace();
    expect((await cli(['run', fixture('pay-agent.mjs'), 'pay invoice 7', '--run-id', 'chat-7'])).code).toBe(3);
    const waiting = await cli(['send', 'chat-7', 'and invoice 8']);
    expect(waiting.code).toBe(2);
    expect(waiting.stderr.trim().split('\n')).toHaveLength(1);
    expect(waiting.stderr).toContain('send: the run is awaiting_approval; expected done or budget_exhausted');
    expect((await cli(['approve', 'chat-7', '--note', 'ok'])).code).toBe(0);
    const before = await stored('chat-7');
    const send = await cli(['send', 'chat-7', 'thanks!', '--max-steps', '9']);
    expect(send.code).toBe(0);
    expect(send.stdout).toContain('message   thanks!');
    expect(send.stdout).toContain('answer    confused'); // the fixture's policy answers anything else so
    const after = await stored('chat-7');
    expect(after?.status).toBe('done');
    expect(after?.entries.slice(0, before?.entries.length)).toEqual(before?.entries);
    expect(after?.entries.slice(before?.entries.length)).toEqual([
      '{"content":"thanks!","role":"user"}',
      '{"final":"confused","role":"assistant"}',
    ]);
    const shown = JSON.parse((await cli(['show', 'chat-7', '--json'])).stdout);
    expect(shown).toMatchObject({ limits: { maxSteps: 9 }, turn: { number: 2, steps: 1 } });
    expect(paid()).toEqual(['chat-7:2 250']);
    // resume with a limit on a run that answered: the limit goes with the next message.
    const resume = await cli(['resume', 'chat-7', '--max-steps', '12']);
    expect(resume.code).toBe(2);
    expect(resume.stderr).toContain('run chat-7 is done: give the new limits to tollgate send, with the next message');
  });

  it('replay runs a stored run again from its journal: exit 0 under its module, 7 and the first divergence under another', async () => {
    const { cli, paid } = workspace();
    expect((await cli(['run', fixture('pay-agent.mjs'), 'pay invoice 7', '--run-id', 'inv-7'])).code).toBe(3);
    expect((await cli(['approve', 'inv-7', '--as', 'carol'])).code).toBe(0);
    expect(paid()).toEqual(['inv-7:2 250']);

    const same = await cli(['replay', 'inv-7']);
    expect(same.code).toBe(0);
    expect(same.stdout).toContain('run inv-7 replays the same under');
    expect(same.stdout).toContain('6 entries, done');
    const other = await cli(['replay', 'inv-7', '--agent', fixture('lenient-pay-agent.mjs')]);
    expect(other.code).toBe(7);
    expect(other.stdout).toContain('diverges under');
    expect(other.stdout).toContain('history[4] differs');
    const asJson = JSON.parse(
      (await cli(['replay', 'inv-7', '--agent', fixture('lenient-pay-agent.mjs'), '--json'])).stdout,
    );
    expect(asJson.divergence).toMatchObject({ at: 4, replayed: { tool: 'pay', result: { paid: 250 } } });
    expect(asJson.divergence.replayed.approval).toBeUndefined();
    expect(paid()).toEqual(['inv-7:2 250']); // no replay ran the tool
    expect((await cli(['replay', 'nope'])).code).toBe(2);
  });

  it('fork stores a new run with a run’s history up to a step; resumed, it takes its own path under its own keys', async () => {
    const { cli, paid, stored } = workspace();
    expect((await cli(['run', fixture('pay-agent.mjs'), 'pay invoice 7', '--run-id', 'inv-7'])).code).toBe(3);
    expect((await cli(['approve', 'inv-7', '--as', 'carol'])).code).toBe(0);
    const before = await stored('inv-7');
    const fork = await cli(['fork', 'inv-7', '--at', '1', '--run-id', 'inv-7b']);
    expect(fork.code).toBe(0);
    expect(fork.stdout).toContain('forked inv-7 at step 1 into inv-7b (3 entries): tollgate resume inv-7b');
    expect(await stored('inv-7')).toEqual(before);
    // Resumed with the original's module: the payment is asked for again, under the fork's key.
    const resumed = await cli(['resume', 'inv-7b']);
    expect(resumed.code).toBe(3);
    expect(resumed.stdout).toContain('key       inv-7b:2');
    expect(paid()).toEqual(['inv-7:2 250']);
    const asJson = await cli(['fork', 'inv-7', '--at', '2', '--run-id', 'inv-7c', '--json']);
    expect(JSON.parse(asJson.stdout)).toEqual({ from: 'inv-7', runId: 'inv-7c', steps: 2, entries: 5 });
    expect(await stored('inv-7c')).toMatchObject({ status: 'running', agent: 'payer' });
    for (const bad of [
      ['fork', 'inv-7', '--at', '3'],
      ['fork', 'inv-7', '--at', 'x'],
      ['fork', 'inv-7'],
      ['fork', 'nope', '--at', '0'],
      ['fork', 'inv-7', '--at', '0', '--run-id', 'inv-7b'],
    ]) {
      const refused = await cli(bad);
      expect(refused.code, bad.join(' ')).toBe(2);
      expect(refused.stderr, bad.join(' ')).not.toContain('    at '); // a message, not a stack
    }
    expect((await cli(['fork', 'inv-7', '--at', '3'])).stderr).toContain(
      'has no finished step 3 to fork at (it finished 2)',
    );
    expect((await cli(['fork', 'inv-7', '--at', '0', '--run-id', 'inv-7b'])).stderr).toContain(
      'there is a run "inv-7b" already',
    );
  });

  it('check tells before a deploy whether a module resumes the stored runs as they stand: exit 0, or 8 and a table', async () => {
    const { cli, paid } = workspace();
    expect((await cli(['run', fixture('pay-agent.mjs'), 'pay invoice 7', '--run-id', 'inv-7'])).code).toBe(3);
    expect((await cli(['run', fixture('pay-agent.mjs'), 'pay invoice 8', '--run-id', 'inv-8'])).code).toBe(3);
    expect((await cli(['approve', 'inv-8'])).code).toBe(0);
    const same = await cli(['check', fixture('pay-agent.mjs')]);
    expect(same.code).toBe(0);
    expect(same.stdout).toContain('1 run of payer checked: each resumes under');
    const capped = await cli(['check', fixture('capped-pay-agent.mjs')]);
    expect(capped.code).toBe(8);
    expect(capped.stdout).toContain('1 run of payer checked: 1 problem under');
    expect(capped.stdout).toMatch(/run\s+status\s+call\s+problem\s+what would happen/);
    expect(capped.stdout).toMatch(
      /inv-7\s+awaiting_approval\s+pay inv-7:2\s+rule-denies\s+the tool's rule now denies it \(over 100\)/,
    );
    const asJson = JSON.parse((await cli(['check', fixture('capped-pay-agent.mjs'), '--json'])).stdout);
    expect(asJson).toMatchObject({ agent: 'payer', checked: 1, problems: [{ runId: 'inv-7', kind: 'rule-denies' }] });
    expect(paid()).toEqual(['inv-8:2 250']); // nothing ran
    expect((await cli(['check', fixture('no-such-agent.mjs')])).code).toBe(2);
  });

  it('deny needs a note, tells the model, and runs nothing', async () => {
    const { cli, paid } = workspace();
    expect((await cli(['run', fixture('pay-agent.mjs'), 'pay', '--run-id', 'd1'])).code).toBe(3);
    const noNote = await cli(['deny', 'd1']);
    expect(noNote.code).toBe(2);
    expect(noNote.stderr).toContain("required option '--note <text>'");
    const blank = await cli(['deny', 'd1', '--note', '  ']);
    expect(blank.code).toBe(2);
    expect(blank.stderr).toContain('deny: --note must say why');
    const deny = await cli(['deny', 'd1', '--note', 'not this month', '--json']);
    expect(deny.code).toBe(0);
    expect(JSON.parse(deny.stdout)).toMatchObject({
      runId: 'd1',
      status: 'done',
      answer: 'not paid: denied by human: not this month',
    });
    expect(paid()).toEqual([]);
  });

  it('show prints the history, the pending call and budgets; --json gives the state', async () => {
    const { cli } = workspace();
    await cli(['run', fixture('pay-agent.mjs'), 'pay', '--run-id', 's1']);
    const show = await cli(['show', 's1']);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain('steps 2/6');
    expect(show.stdout).toContain('goal      pay');
    expect(show.stdout).toContain(`call id   ${callIdOf('s1:2', 1, 'pay', { amount: 250 })}`);
    const json = JSON.parse((await cli(['show', 's1', '--json'])).stdout);
    expect(json).toMatchObject({ runId: 's1', status: 'awaiting_approval', steps: 2, version: expect.any(Number) });
  });

  it('exit codes: budget exhausted 4, failed 5, cancelled 6, usage 2', async () => {
    const { cli, dir } = workspace();
    const budget = await cli(['run', fixture('loop-agent.mjs'), 'think', '--max-steps', '2', '--run-id', 'b1']);
    expect(budget.code).toBe(4);
    expect(budget.stdout).toContain('stopped by the steps budget');
    const more = await cli(['resume', 'b1', '--agent', fixture('loop-agent.mjs'), '--max-steps', '3', '--json']);
    expect(more.code).toBe(4);
    expect(JSON.parse(more.stdout)).toMatchObject({ steps: 3, stoppedBy: 'steps' });

    const failed = await cli(['run', fixture('failing-agent.mjs'), 'go', '--run-id', 'f1']);
    expect(failed.code).toBe(5);
    expect(failed.stdout).toContain('Error: model unavailable');

    // A cancelled run (from a checkpoint) resumes to its status: cancelled.
    const { Agent } = await import('../../src/index.js');
    const agent = new Agent({ runId: 'c1', policy: () => ({ final: 1 }), tools: [] });
    await agent.cancel('stop');
    writeFileSync(join(dir, 'c1.json'), agent.checkpoint());
    expect((await cli(['import', 'c1.json'])).code).toBe(0);
    expect((await cli(['resume', 'c1', '--agent', fixture('loop-agent.mjs')])).code).toBe(6);

    expect((await cli(['run'])).code).toBe(2);
    expect((await cli(['bogus'])).code).toBe(2);
    expect((await cli(['run', fixture('loop-agent.mjs'), 'x', '--max-steps', '-1'])).code).toBe(2);
    expect((await cli(['runs', '--status', 'sleeping'])).code).toBe(2);
  });

  it('bad input gets one clear line, a non-zero exit, and changes nothing', async () => {
    const { cli, dir, stored } = workspace();
    const cases: [string[], number, RegExp][] = [
      [['show', 'nope'], 2, /no run "nope" in store \S+tollgate.db \(no such file\)/],
      [['approve', 'nope', '--agent', fixture('pay-agent.mjs')], 2, /no run "nope"/],
      [['approve', 'nope'], 2, /no run "nope" in store/],
      [['run', fixture('no-agent.mjs'), 'go'], 2, /does not export an agent/],
      [['run', join(dir, 'missing.mjs'), 'go'], 2, /agent module not found/],
      [['runs', '--store', 'postgres://postgres@127.0.0.1:1/test'], 1, /cannot connect/],
      [['import', 'missing.json'], 2, /cannot read missing.json/],
    ];
    writeFileSync(
      join(dir, 'corrupt.json'),
      '{"format":"tollgate.checkpoint","version":1,"snapshot":{"value":"sleeping"}}',
    );
    cases.push([['import', 'corrupt.json'], 2, /invalid checkpoint/]);
    writeFileSync(join(dir, 'half.json'), '{"format":"tollgate.che');
    cases.push([['import', 'half.json'], 2, /not JSON/]);
    for (const [args, code, message] of cases) {
      const result = await cli(args);
      expect(result.code, args.join(' ')).toBe(code);
      expect(result.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(result.stderr, args.join(' ')).toMatch(message);
    }
    const runs = await cli(['runs', '--json']);
    expect(JSON.parse(runs.stdout)).toEqual([]);
    expect(await stored('nope')).toBeNull();
  });

  it('export and import move a run between stores; importing twice is refused', async () => {
    const { cli, paid } = workspace();
    await cli(['run', fixture('pay-agent.mjs'), 'pay', '--run-id', 'm1']);
    const exported = await cli(['export', 'm1', '-o', 'm1.json']);
    expect(exported.code).toBe(0);
    const other = ['--store', 'other.db'];
    expect((await cli(['import', 'm1.json', ...other])).code).toBe(0);
    const twice = await cli(['import', 'm1.json', ...other]);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(/already in store \S+other.db; nothing imported/);
    // An imported run has no module on record: approve says so, and how to give one.
    const unknown = await cli(['approve', 'm1', ...other]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no agent module known for run m1 of store \S+other.db: pass --agent <module>/);
    const approve = await cli(['approve', 'm1', ...other, '--agent', fixture('pay-agent.mjs')]);
    expect(approve.code).toBe(0);
    expect(paid()).toEqual(['m1:2 250']);
    const stdout = await cli(['export', 'm1', ...other]);
    expect(JSON.parse(stdout.stdout).snapshot.context.answer).toBe('paid');
  });

  it('machine prints Mermaid and JSON', async () => {
    const { cli } = workspace();
    const mermaid = await cli(['machine']);
    expect(mermaid.stdout.startsWith('stateDiagram-v2')).toBe(true);
    const json = JSON.parse((await cli(['machine', '--format', 'json'])).stdout);
    expect(json.states.map((s: { id: string }) => s.id)).toContain('agent.awaiting_approval');
    expect((await cli(['machine', '--format', 'svg'])).code).toBe(2);
  });

  it('colours: none without a terminal or with NO_COLOR; FORCE_COLOR turns them on', async () => {
    const { cli } = workspace();
    const plain = await cli(['run', fixture('loop-agent.mjs'), 'x', '--max-steps', '1']);
    expect(plain.stdout).not.toContain('\u001b[');
    const forced = await cli(['run', fixture('loop-agent.mjs'), 'x', '--max-steps', '1'], { FORCE_COLOR: '1' });
    expect(forced.stdout).toContain('\u001b[');
  });

  it.skipIf(!process.env.TOLLGATE_PG_URL)(
    'run with a Postgres URL stores the run there (needs TOLLGATE_PG_URL)',
    async () => {
      const url = process.env.TOLLGATE_PG_URL as string;
      const { cli } = workspace();
      const runId = `pg-${Date.now()}`;
      const run = await cli(['run', fixture('pay-agent.mjs'), 'pay', '--run-id', runId, '--store', url]);
      expect(run.code).toBe(3);
      const approve = await cli(['approve', runId, '--store', url]);
      expect(approve.code).toBe(0);
      const { PostgresStore } = await import('../../src/stores/postgres.js');
      const store = new PostgresStore(url);
      try {
        expect((await store.load(runId))?.status).toBe('done');
        await store.delete(runId);
      } finally {
        await store.close();
      }
    },
  );
});
