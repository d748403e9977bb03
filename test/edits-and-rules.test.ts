/**
 * Issue 12: edits on approval, approval rules with their context and automatic denials, standing
 * approvals, and crashes between the calls of a step.
 */
import { describe, expect, it } from 'vitest';
import { Agent, type ApprovalContext, EditRejectedError, type Tool } from '../src/index.js';
import { gate, recorder, sequence, until } from './support/helpers.js';

describe('edits on approval', () => {
  it("the tool runs with the edited arguments; the assistant entry keeps the model's; the tool entry says so", async () => {
    const pay = recorder('pay', { sideEffect: true }, (a) => ({ paid: a.cents }));
    const agent = new Agent({
      runId: 'r',
      policy: sequence({ tool: 'pay', args: { cents: 50_000 } }, { final: 1 }),
      tools: [pay.tool],
    });
    await agent.start('go');
    const id = agent.state.pending?.id as string;
    expect(await agent.decide({ [id]: { approve: true, note: 'capped', args: { cents: 5_000 } } }, { by: 'ann' })).toBe(
      'done',
    );
    expect(pay.calls).toEqual([{ args: { cents: 5_000 }, key: 'r:1' }]);
    expect(agent.state.history[1]).toEqual({ role: 'assistant', tool: 'pay', args: { cents: 50_000 } });
    expect(agent.state.history[2]).toEqual({
      role: 'tool',
      tool: 'pay',
      result: { paid: 5_000 },
      approval: {
        approved: true,
        by: 'ann',
        note: 'capped',
        at: expect.any(String),
        callId: id,
        args: { cents: 5_000 },
      },
    });
  });

  it('an edit survives a crash while the edited call runs: the write-ahead record holds it', async () => {
    const held = gate();
    const pay = recorder('pay', { sideEffect: true, idempotent: true }, () => held.promise);
    const policy = sequence({ tool: 'pay', args: { cents: 9 } }, { final: 1 });
    const agent = new Agent({ runId: 'r', policy, tools: [pay.tool] });
    await agent.start('go');
    const id = agent.state.pending?.id as string;
    void agent.decide({ [id]: { approve: true, args: { cents: 3 } } });
    await until(() => pay.calls.length === 1);
    const blob = agent.checkpoint();
    const again = recorder('pay', { sideEffect: true, idempotent: true }, () => 'ok');
    const resumed = Agent.resume(blob, { policy, tools: [again.tool] });
    expect(await resumed.run()).toBe('done');
    expect(again.calls).toEqual([{ args: { cents: 3 }, key: 'r:1' }]);
  });

  it('is refused where the tool forbids it, for an outcome-unknown call, and when the edit is not JSON', async () => {
    const locked = recorder('locked', { sideEffect: true, allowEdit: false });
    const agent = new Agent({ runId: 'r', policy: sequence({ tool: 'locked', args: { a: 1 } }), tools: [locked.tool] });
    await agent.start('go');
    const id = agent.state.pending?.id as string;
    const before = agent.checkpoint();
    await expect(agent.decide({ [id]: { approve: true, args: { a: 2 } } })).rejects.toThrow(EditRejectedError);
    await expect(agent.decide({ [id]: { approve: true, args: { a: 2 } } })).rejects.toThrow(
      'does not allow edits (allowEdit: false)',
    );
    expect(agent.checkpoint()).toBe(before);

    const free = recorder('free', { sideEffect: true });
    const other = new Agent({ runId: 'r', policy: sequence({ tool: 'free' }), tools: [free.tool] });
    await other.start('go');
    const otherId = other.state.pending?.id as string;
    await expect(other.decide({ [otherId]: { approve: true, args: { n: 1n } as never } })).rejects.toThrow(
      /args\.n is a bigint/,
    );
    await expect(other.decide({ [otherId]: { approve: true, args: [1] as never } })).rejects.toThrow(
      'args must be an object, got an array',
    );
  });

  it("an edit cannot step over the tool's rule: an automatic denial is a hard limit", async () => {
    const wire = recorder('wire', {
      sideEffect: true,
      needsApproval: ((a: { cents: number }) => (a.cents > 1_000 ? { deny: 'over the limit' } : true)) as never,
    });
    const agent = new Agent({
      runId: 'r',
      policy: sequence({ tool: 'wire', args: { cents: 500 } }),
      tools: [wire.tool],
    });
    expect(await agent.start('go')).toBe('awaiting_approval');
    const id = agent.state.pending?.id as string;
    await expect(agent.decide({ [id]: { approve: true, args: { cents: 5_000 } } })).rejects.toThrow(
      "the tool's rule denies these arguments: over the limit",
    );
    expect(wire.calls).toEqual([]);
    expect(agent.status).toBe('awaiting_approval');
  });

  it('an outcome-unknown call is approved only as it was', async () => {
    const held = gate();
    const first = recorder('pay', { sideEffect: true }, () => held.promise);
    const policy = sequence({ tool: 'pay', args: { cents: 9 } }, { final: 1 });
    const agent = new Agent({ runId: 'r', policy, tools: [first.tool] });
    await agent.start('go');
    void agent.decide(true);
    await until(() => first.calls.length === 1);
    const pay = recorder('pay', { sideEffect: true });
    const resumed = Agent.resume(agent.checkpoint(), { policy, tools: [pay.tool] });
    expect(await resumed.run()).toBe('awaiting_approval');
    const id = resumed.state.pending?.id as string;
    await expect(resumed.decide({ [id]: { approve: true, args: { cents: 1 } } })).rejects.toThrow(
      'its outcome is unknown',
    );
    expect(pay.calls).toEqual([]);
  });
});

describe('approval rules', () => {
  it('get the run id, step, tool and history, and may deny at once: nobody is asked, nothing runs', async () => {
    const seen: ApprovalContext[] = [];
    const wire: Tool = {
      name: 'wire',
      sideEffect: true,
      needsApproval: (args: { cents: number }, ctx) => {
        seen.push(ctx);
        return args.cents > 1_000_000 ? { deny: 'over the wire limit' } : args.cents > 100;
      },
      fn: () => 'sent',
    };
    const agent = new Agent({
      runId: 'r',
      policy: sequence(
        {
          calls: [
            { tool: 'wire', args: { cents: 5 } },
            { tool: 'wire', args: { cents: 5_000_000 } },
          ],
        },
        { final: 1 },
      ),
      tools: [wire],
    });
    expect(await agent.start('go')).toBe('done');
    expect(seen.map((c) => [c.runId, c.step, c.tool, c.history.length])).toEqual([
      ['r', 1, 'wire', 1],
      ['r', 1, 'wire', 1],
      // The tool actor asks again before running the call that needed nobody (defence in depth),
      // with the history the rule saw then: the step's own assistant entry is not in it.
      ['r', 1, 'wire', 1],
    ]);
    expect(agent.state.history.slice(2, 4)).toEqual([
      { role: 'tool', tool: 'wire', id: 'r:1.1', result: 'sent' },
      { role: 'tool', tool: 'wire', id: 'r:1.2', error: 'denied by rule: over the wire limit' },
    ]);
  });

  it('a rule that returns something odd asks a human: the gate fails closed', async () => {
    const odd = recorder('odd', { needsApproval: (() => 'maybe') as never });
    const agent = new Agent({ policy: sequence({ tool: 'odd' }), tools: [odd.tool] });
    expect(await agent.start('go')).toBe('awaiting_approval');
  });
});

describe('standing approvals', () => {
  it('approve always: later calls of that tool run without asking, each recorded with the grant', async () => {
    const mail = recorder('mail', { sideEffect: true });
    const pay = recorder('pay', { sideEffect: true });
    const agent = new Agent({
      runId: 'r',
      policy: sequence(
        { tool: 'mail', args: { n: 1 } },
        { tool: 'mail', args: { n: 2 } },
        { tool: 'pay' },
        { final: 1 },
      ),
      tools: [mail.tool, pay.tool],
    });
    await agent.start('go');
    const grant = agent.state.pending?.id as string;
    expect(await agent.decide({ [grant]: { approve: true, note: 'mail is fine', always: true } }, { by: 'ann' })).toBe(
      'awaiting_approval',
    );
    // The second mail ran without asking; pay still asks.
    expect(mail.calls.map((c) => c.args)).toEqual([{ n: 1 }, { n: 2 }]);
    expect(agent.state.pending?.tool).toBe('pay');
    expect(agent.state.standing).toEqual({
      mail: { approved: true, by: 'ann', note: 'mail is fine', at: expect.any(String), callId: grant, always: true },
    });
    const second = agent.state.history[4] as unknown as { approval: Record<string, unknown> };
    expect(second.approval).toEqual({
      approved: true,
      by: 'ann',
      note: 'mail is fine',
      at: expect.any(String),
      callId: expect.stringMatching(/^r:2#1@/),
      standing: grant,
    });
    // It is part of the run: a resumed run keeps it.
    const resumed = Agent.resume(agent.checkpoint(), {
      policy: sequence({ tool: 'mail' }, { final: 1 }),
      tools: [mail.tool, pay.tool],
    });
    expect(resumed.state.standing).toEqual(agent.state.standing);
  });
});

describe('crashes between the calls of a step', () => {
  it('call 1 done, call 2 in flight, call 3 queued: resume keeps 1, asks again for 2, and runs 3 only after 2 is decided', async () => {
    const held = gate();
    const look = recorder('look', {}, () => 'seen');
    const slowPay = recorder('pay', { sideEffect: true }, () => held.promise);
    const mail = recorder('mail', { sideEffect: true, idempotent: true });
    const policy = sequence(
      { calls: [{ tool: 'look' }, { tool: 'pay', args: { cents: 7 } }, { tool: 'mail' }] },
      { final: 'ok' },
    );
    const agent = new Agent({ runId: 'r', policy, tools: [look.tool, slowPay.tool, mail.tool] });
    expect(await agent.start('go')).toBe('awaiting_approval');
    const [pay, mailCall] = agent.state.pendingCalls.map((p) => p.id) as [string, string];
    void agent.decide({ [pay]: { approve: true }, [mailCall]: { approve: true } });
    await until(() => slowPay.calls.length === 1);
    expect(agent.state.inflight).toEqual({ key: 'r:1.2', tool: 'pay', step: 1 });
    const blob = agent.checkpoint(); // the process dies here

    const pay2 = recorder('pay', { sideEffect: true });
    const mail2 = recorder('mail', { sideEffect: true, idempotent: true });
    const look2 = recorder('look');
    const resumed = Agent.resume(blob, { policy, tools: [look2.tool, pay2.tool, mail2.tool] });
    expect(await resumed.run()).toBe('awaiting_approval');
    expect(look2.calls).toEqual([]); // call 1 had its result: not run again
    expect(pay2.calls).toEqual([]); // call 2: not idempotent, outcome unknown: a human again
    // Call 3 is approved but waits: calls take effect in their order, and call 2's is unknown.
    expect(mail2.calls).toEqual([]);
    expect(resumed.state.pendingCalls).toEqual([
      expect.objectContaining({ key: 'r:1.2', attempt: 2, outcome: 'unknown' }),
    ]);
    const again = resumed.state.pending?.id as string;
    expect(await resumed.decide({ [again]: { approve: false, note: 'it went through' } })).toBe('done');
    expect(mail2.calls).toEqual([{ args: {}, key: 'r:1.3' }]); // then it ran, with its approval
    expect(resumed.state.history.slice(2, 5)).toEqual([
      { role: 'tool', tool: 'look', id: 'r:1.1', result: 'seen' },
      expect.objectContaining({
        tool: 'pay',
        id: 'r:1.2',
        error: 'denied by human: it went through',
        outcome: 'unknown',
      }),
      expect.objectContaining({ tool: 'mail', id: 'r:1.3', result: 'ok' }),
    ]);
  });
});
