import { describe, expect, it } from 'vitest';
import { Agent, NoPendingApprovalError, OptionsError, StaleApprovalError } from '../src/index.js';
import { ManualClock } from '../src/testing/index.js';
import { idLike, recorder, sequence } from './support/helpers.js';

const T0 = Date.parse('2026-03-01T12:00:00.000Z');

function refundSetup(extra: object = {}) {
  const refund = recorder('refund', {
    sideEffect: true,
    needsApproval: ({ amount }: { amount: number }) => amount > 100,
  });
  const policy = sequence({ tool: 'refund', args: { amount: 500 } }, { final: 'done' });
  const clock = new ManualClock(T0);
  const agent = new Agent({ policy, tools: [refund.tool], clock, runId: 'r', ...extra });
  return { refund, policy, clock, agent };
}

describe('approval', () => {
  it('pauses with the pending call and executes nothing', async () => {
    const { agent, refund } = refundSetup({ approvalTtlMs: 60_000 });
    expect(await agent.start('refund')).toBe('awaiting_approval');
    expect(refund.calls).toEqual([]);
    expect(agent.state.pending).toEqual({
      id: idLike('r:1#1'),
      key: 'r:1',
      step: 1,
      tool: 'refund',
      args: { amount: 500 },
      attempt: 1,
      requestedAt: '2026-03-01T12:00:00.000Z',
      expiresAt: '2026-03-01T12:01:00.000Z',
    });
  });

  it('needsApproval as a function: below the amount runs without asking', async () => {
    const refund = recorder('refund', {
      sideEffect: true,
      needsApproval: ({ amount }: { amount: number }) => amount > 100,
    });
    const agent = new Agent({
      policy: sequence({ tool: 'refund', args: { amount: 5 } }, { final: 'ok' }),
      tools: [refund.tool],
    });
    expect(await agent.start('refund')).toBe('done');
    expect(refund.calls).toHaveLength(1);
  });

  it('a needsApproval predicate that throws or rejects asks for approval (fails closed)', async () => {
    for (const needsApproval of [
      () => {
        throw new Error('rule broke');
      },
      async () => Promise.reject(new Error('rule broke')),
    ]) {
      const t = recorder('t', { needsApproval });
      const agent = new Agent({ policy: sequence({ tool: 't' }), tools: [t.tool] });
      expect(await agent.start('go')).toBe('awaiting_approval');
      expect(t.calls).toEqual([]);
    }
  });

  it('needsApproval: false lets a side effect run unasked; sideEffect alone asks', async () => {
    const quiet = recorder('log', { sideEffect: true, needsApproval: false });
    const agent = new Agent({ policy: sequence({ tool: 'log' }, { final: 1 }), tools: [quiet.tool] });
    expect(await agent.start('go')).toBe('done');
    expect(quiet.calls).toHaveLength(1);
    const loud = recorder('mail', { sideEffect: true });
    const other = new Agent({ policy: sequence({ tool: 'mail' }), tools: [loud.tool] });
    expect(await other.start('go')).toBe('awaiting_approval');
  });

  // Standing approvals are kept by tool name in a plain object: a name that Object.prototype also
  // has must not read as a standing approval, nor (`__proto__`) be lost when one is granted.
  it.each(['constructor', 'toString', 'hasOwnProperty', '__proto__', 'valueOf'])(
    'a side effect named %s asks a human; an always-approval covers its later calls, across a resume',
    async (name) => {
      const tool = recorder(name, { sideEffect: true });
      const policy = sequence({ tool: name, args: { n: 1 } }, { tool: name, args: { n: 2 } }, { final: 'done' });
      const agent = new Agent({ policy, tools: [tool.tool], runId: 'r' });
      expect(await agent.start('go')).toBe('awaiting_approval');
      expect(tool.calls).toEqual([]);
      const [call] = agent.state.pendingCalls;
      expect(call?.tool).toBe(name);
      const blob = agent.checkpoint();
      const resumed = Agent.resume(blob, { policy, tools: [tool.tool] });
      expect(await resumed.decide({ [call?.id as string]: { approve: true, always: true } }, { by: 'ann' })).toBe(
        'done',
      );
      expect(tool.calls.map((c) => c.args)).toEqual([{ n: 1 }, { n: 2 }]);
      expect(Object.hasOwn(resumed.state.standing, name)).toBe(true);
      expect(Object.keys(Agent.resume(resumed.checkpoint(), { policy, tools: [tool.tool] }).state.standing)).toEqual([
        name,
      ]);
    },
  );

  it('approve runs the call once with its key; approver and note go into history', async () => {
    const { agent, refund } = refundSetup();
    await agent.start('refund');
    expect(
      await agent.decide(true, 'customer is right', { by: 'alice', callId: agent.state.pending?.id as string }),
    ).toBe('done');
    expect(refund.calls).toEqual([{ args: { amount: 500 }, key: 'r:1' }]);
    expect(agent.state.history[2]).toEqual({
      role: 'tool',
      tool: 'refund',
      result: 'ok',
      approval: {
        approved: true,
        by: 'alice',
        note: 'customer is right',
        at: '2026-03-01T12:00:00.000Z',
        callId: idLike('r:1#1'),
      },
    });
    expect(agent.state.pending).toBeNull();
  });

  it('deny tells the model and executes nothing', async () => {
    const { agent, refund, policy } = refundSetup();
    await agent.start('refund');
    expect(await agent.decide(false, 'too much', { by: 'bob' })).toBe('done');
    expect(refund.calls).toEqual([]);
    const observation = { role: 'tool', tool: 'refund', error: 'denied by human: too much' };
    expect(agent.state.history[2]).toMatchObject({
      ...observation,
      approval: { approved: false, by: 'bob', note: 'too much' },
    });
    expect(policy.calls[1]?.[2]).toMatchObject(observation);
  });

  it('a second decide throws NoPendingApprovalError with the run id and status', async () => {
    const { agent } = refundSetup();
    await agent.start('refund');
    await agent.decide(true);
    const error = await agent.decide(true).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoPendingApprovalError);
    expect(error).toMatchObject({ name: 'NoPendingApprovalError', runId: 'r', status: 'done' });
  });

  it('two concurrent decides: one runs, the other throws', async () => {
    const { agent, refund } = refundSetup();
    await agent.start('refund');
    const results = await Promise.allSettled([agent.decide(true), agent.decide(true)]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(refund.calls).toHaveLength(1);
  });

  it('a stale call id throws StaleApprovalError and changes nothing', async () => {
    const { agent, refund } = refundSetup();
    await agent.start('refund');
    const before = agent.checkpoint();
    const error = await agent.decide(true, '', { callId: 'r:0#1' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StaleApprovalError);
    expect(error).toMatchObject({
      callId: 'r:0#1',
      pendingId: idLike('r:1#1'),
      runId: 'r',
      status: 'awaiting_approval',
    });
    expect(agent.checkpoint()).toBe(before);
    expect(refund.calls).toEqual([]);
  });

  it('bad decide arguments throw OptionsError and change nothing', async () => {
    const { agent } = refundSetup();
    await agent.start('refund');
    const before = agent.checkpoint();
    await expect(agent.decide('yes' as never)).rejects.toBeInstanceOf(OptionsError);
    await expect(agent.decide(true, 5 as never)).rejects.toBeInstanceOf(OptionsError);
    await expect(agent.decide(true, '', { by: 1 as never })).rejects.toBeInstanceOf(OptionsError);
    expect(agent.checkpoint()).toBe(before);
  });

  it('deciding after expiry executes nothing and tells the model approval expired', async () => {
    for (const approved of [true, false]) {
      const { agent, refund, clock, policy } = refundSetup({ approvalTtlMs: 60_000 });
      await agent.start('refund');
      clock.advance(60_000);
      expect(await agent.decide(approved, 'late', { by: 'carol' })).toBe('done');
      expect(refund.calls).toEqual([]);
      expect(agent.state.history[2]).toMatchObject({
        role: 'tool',
        tool: 'refund',
        error: 'approval expired',
        approval: { approved, by: 'carol' },
      });
      expect(policy.calls[1]?.[2]).toMatchObject({ error: 'approval expired' });
    }
  });

  it('just before expiry the approval still runs', async () => {
    const { agent, refund, clock } = refundSetup({ approvalTtlMs: 60_000 });
    await agent.start('refund');
    clock.advance(59_999);
    await agent.decide(true);
    expect(refund.calls).toHaveLength(1);
  });

  it('run() on an expired approval expires it; before expiry it leaves it waiting', async () => {
    const { agent, refund, clock } = refundSetup({ approvalTtlMs: 1000 });
    await agent.start('refund');
    expect(await agent.run()).toBe('awaiting_approval');
    clock.advance(1000);
    expect(await agent.run()).toBe('done');
    expect(refund.calls).toEqual([]);
    expect(agent.state.history[2]).toEqual({ role: 'tool', tool: 'refund', error: 'approval expired' });
  });

  it('an expiry survives checkpoint and resume in another agent', async () => {
    const { agent, refund, clock } = refundSetup({ approvalTtlMs: 1000 });
    await agent.start('refund');
    const resumed = Agent.resume(agent.checkpoint(), { policy: sequence({ final: 'x' }), tools: [refund.tool], clock });
    clock.advance(5000);
    await resumed.decide(true);
    expect(refund.calls).toEqual([]);
  });

  it('each new request for the same tool gets a new id: an old id is stale', async () => {
    const t = recorder('t', { sideEffect: true });
    const agent = new Agent({ runId: 'r', policy: sequence({ tool: 't' }), tools: [t.tool] });
    await agent.start('go');
    const first = agent.state.pending?.id;
    await agent.decide(true, '', { callId: first });
    expect(agent.state.pending?.id).toEqual(idLike('r:2#1'));
    await expect(agent.decide(true, '', { callId: first })).rejects.toBeInstanceOf(StaleApprovalError);
    expect(t.calls).toHaveLength(1);
  });
});
