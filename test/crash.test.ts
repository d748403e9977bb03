import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { callIdOf } from '../machines/index.js';
import { Agent, StaleApprovalError } from '../src/index.js';
import { gate, idLike, recorder, sequence, until } from './support/helpers.js';
import { blocking, midCall } from './support/mid-call.js';

describe('crash semantics: write ahead', () => {
  it('the checkpoint taken while a tool runs records the key in flight', async () => {
    const blob = await midCall({ sideEffect: true });
    const state = Agent.resume(blob, { policy: sequence(), tools: [] }).state;
    expect(state.status).toBe('running');
    expect(state.inflight).toEqual({ key: 'r:1', tool: 'pay', step: 1 });
  });

  it('an idempotent tool in flight is called again with the same key', async () => {
    const blob = await midCall({ sideEffect: true, idempotent: true });
    const again = recorder('pay', { sideEffect: true, idempotent: true });
    const agent = Agent.resume(blob, { policy: sequence({ final: 'paid' }), tools: [again.tool] });
    expect(await agent.run()).toBe('done');
    expect(again.calls).toEqual([{ args: { amount: 7 }, key: 'r:1' }]);
    expect(agent.state.history[2]).toMatchObject({
      role: 'tool',
      tool: 'pay',
      result: 'ok',
      approval: { by: 'alice' },
    });
  });

  it('an idempotent call in flight is checked again against the tool it resumes with: arguments it refuses are not run', async () => {
    const blob = await midCall({ sideEffect: true, idempotent: true });
    const stricter = recorder('pay', {
      sideEffect: true,
      idempotent: true,
      input: z.object({ amount: z.number().max(5) }),
    });
    const agent = Agent.resume(blob, { policy: sequence({ final: 'paid' }), tools: [stricter.tool] });
    expect(await agent.run()).toBe('done');
    expect(stricter.calls).toEqual([]);
    expect(agent.state.history[2]).toMatchObject({ role: 'tool', tool: 'pay', approval: { by: 'alice' } });
    expect(agent.state.history[2]).toHaveProperty('error', expect.stringMatching(/^invalid arguments: .*amount/));
  });

  it('a non-idempotent side effect in flight is not called again: a human decides, outcome unknown', async () => {
    const blob = await midCall({ sideEffect: true });
    const again = recorder('pay', { sideEffect: true });
    const agent = Agent.resume(blob, { policy: sequence({ final: 'paid' }), tools: [again.tool] });
    expect(await agent.run()).toBe('awaiting_approval');
    expect(again.calls).toEqual([]);
    expect(agent.state.pending).toMatchObject({ id: idLike('r:1#2'), key: 'r:1', attempt: 2, outcome: 'unknown' });
    const paused = agent.checkpoint();

    // The first request's own id is stale: the re-ask is a new request.
    const first = callIdOf('r:1', 1, 'pay', { amount: 7 });
    await expect(agent.decide(true, '', { callId: first })).rejects.toBeInstanceOf(StaleApprovalError);
    const second = agent.state.pending?.id as string;
    expect(await agent.decide(true, 'checked the ledger: not paid', { callId: second })).toBe('done');
    expect(again.calls).toEqual([{ args: { amount: 7 }, key: 'r:1' }]);

    const denied = Agent.resume(paused, { policy: sequence({ final: 'stopped' }), tools: [again.tool] });
    expect(await denied.decide(false, 'it went through')).toBe('done');
    expect(again.calls).toHaveLength(1);
    expect(denied.state.history[2]).toMatchObject({ error: 'denied by human: it went through', outcome: 'unknown' });
  });

  it('a pure tool in flight simply runs again', async () => {
    const blob = await midCall({});
    const again = recorder('pay');
    const agent = Agent.resume(blob, { policy: sequence({ final: 'paid' }), tools: [again.tool] });
    expect(await agent.run()).toBe('done');
    expect(again.calls).toHaveLength(1);
  });

  it('a tool now marked as needing approval is refused if its in-flight call had none', async () => {
    const blob = await midCall({});
    const strict = recorder('pay', { needsApproval: true });
    const agent = Agent.resume(blob, { policy: sequence({ final: 'x' }), tools: [strict.tool] });
    expect(await agent.run()).toBe('done');
    expect(strict.calls).toEqual([]);
    expect(agent.state.history[2]).toMatchObject({ error: 'refused: pay needs approval and this call has none' });
  });

  it('a policy call in flight is asked again and counts one step', async () => {
    const held = gate<never>();
    const agent = new Agent({ runId: 'r', policy: () => held.promise, tools: [] });
    void agent.start('go');
    const blob = agent.checkpoint();
    await agent.cancel();
    const resumed = Agent.resume(blob, { policy: sequence({ final: 'ok' }), tools: [] });
    expect(await resumed.run()).toBe('done');
    expect(resumed.state.steps).toBe(1);
  });

  it('cancelling a resumed run with a call in flight never calls the tool', async () => {
    const blob = await midCall({ sideEffect: true, idempotent: true });
    const again = recorder('pay', { sideEffect: true, idempotent: true });
    const agent = Agent.resume(blob, { policy: sequence(), tools: [again.tool] });
    expect(await agent.cancel('stop')).toBe('cancelled');
    await new Promise((r) => setImmediate(r));
    expect(again.calls).toEqual([]);
    expect(agent.state.cancelReason).toBe('stop');
  });
});

describe('cancel', () => {
  it('aborts the signal of a tool in flight and ends the run', async () => {
    const b = blocking('slow');
    const agent = new Agent({ policy: sequence({ tool: 'slow' }), tools: [b.tool] });
    const started = agent.start('go');
    await until(() => b.calls.length === 1);
    expect(await agent.cancel('user left')).toBe('cancelled');
    expect(await started).toBe('cancelled');
    expect(b.calls[0]?.signal.aborted).toBe(true);
    expect(agent.state).toMatchObject({ status: 'cancelled', cancelReason: 'user left' });
  });

  it('works from idle, awaiting_approval, budget_exhausted and failed', async () => {
    const idle = new Agent({ policy: sequence(), tools: [] });
    expect(await idle.cancel()).toBe('cancelled');
    const waiting = new Agent({ policy: sequence({ tool: 't' }), tools: [recorder('t', { sideEffect: true }).tool] });
    await waiting.start('go');
    expect(await waiting.cancel()).toBe('cancelled');
    const spent = new Agent({ policy: sequence(), tools: [], maxSteps: 0 });
    await spent.start('go');
    expect(await spent.cancel()).toBe('cancelled');
    const failed = new Agent({ policyRetries: 0, tools: [], policy: () => Promise.reject(new Error('x')) });
    expect(await failed.start('go')).toBe('failed');
    expect(await failed.cancel()).toBe('cancelled');
  });
});

describe('found by the model-based tests', () => {
  it('a run cancelled while awaiting approval, mid-call or out of budget has a checkpoint that loads', async () => {
    const waiting = new Agent({
      runId: 'w',
      policy: sequence({ tool: 'mail' }),
      tools: [recorder('mail', { sideEffect: true }).tool],
    });
    await waiting.start('go');
    const spent = new Agent({ runId: 's', policy: sequence(), tools: [], maxSteps: 0 });
    await spent.start('go');
    const b = blocking('slow');
    const busy = new Agent({ runId: 'b', policy: sequence({ tool: 'slow' }), tools: [b.tool] });
    void busy.start('go');
    await until(() => b.calls.length === 1);
    for (const agent of [waiting, spent, busy]) {
      await agent.cancel('stop');
      const blob = agent.checkpoint();
      const back = Agent.resume(blob, { policy: sequence(), tools: [] });
      expect(back.state).toMatchObject({ status: 'cancelled', pending: null, inflight: null, stoppedBy: null });
      expect(back.checkpoint()).toBe(blob);
    }
  });

  it('resuming mid policy call with a budget already spent calls nothing and stops on the budget', async () => {
    const held = gate<never>();
    const first = new Agent({
      runId: 'r',
      maxSteps: 5,
      policy: scriptedHold(held.promise),
      tools: [recorder('t').tool],
    });
    void first.start('go');
    await until(() => first.state.steps === 2 && first.status === 'running');
    const blob = first.checkpoint(); // the policy is being asked for step 3
    expect(JSON.parse(blob).snapshot.value).toEqual({ running: 'deciding' });
    await first.cancel();

    let calls = 0;
    const policy = () => {
      calls++;
      return { final: 'x' };
    };
    const lowered = Agent.resume(blob, { policy, tools: [], maxSteps: 2 });
    expect(lowered.state).toMatchObject({ status: 'budget_exhausted', stoppedBy: 'steps' });
    expect(await lowered.run()).toBe('budget_exhausted');
    expect(calls).toBe(0);

    const later = Agent.resume(blob, { policy, tools: [] });
    later.extendBudget({ maxSteps: 2 });
    expect(await later.run()).toBe('budget_exhausted');
    expect(calls).toBe(0);

    const raised = Agent.resume(blob, { policy, tools: [], maxSteps: 3 });
    expect(await raised.run()).toBe('done');
    expect(calls).toBe(1);
  });
});

/** Two tool steps, then a policy call that hangs on `hold`. */
function scriptedHold(hold: Promise<never>) {
  return (history: unknown[]) => (history.length < 5 ? { tool: 't' } : hold);
}
