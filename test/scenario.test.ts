import { describe, expect, it } from 'vitest';
import { Agent, NoPendingApprovalError } from '../src/index.js';
import { idLike } from './support/helpers.js';
import { refundPolicy, refundTools, type Sent } from './support/refund.js';

describe('the seed scenario (refund email)', () => {
  const setup = () => {
    const sent: Sent[] = [];
    return { sent, options: { policy: refundPolicy, tools: refundTools(sent) } };
  };

  it('pauses before the side effect, then approve, deny and a smaller budget each behave', async () => {
    const { sent, options } = setup();
    const agent = new Agent({ ...options, runId: 'run-1' });
    expect(await agent.start('email ops the refund policy')).toBe('awaiting_approval');
    expect(sent).toEqual([]);
    expect(agent.state.pending).toMatchObject({ tool: 'send_email', key: 'run-1:2', args: { to: 'ops@example.com' } });
    const blob = agent.checkpoint();
    expect(Agent.resume(blob, options).checkpoint()).toBe(blob);

    const approved = Agent.resume(blob, options);
    expect(await approved.decide(true, 'ok')).toBe('done');
    expect(approved.state.answer).toBe('emailed');
    expect(sent).toEqual([{ to: 'ops@example.com', key: 'run-1:2' }]);
    await expect(approved.decide(true)).rejects.toBeInstanceOf(NoPendingApprovalError);

    const denied = Agent.resume(blob, options);
    expect(await denied.decide(false, 'not today')).toBe('done');
    expect(denied.state.answer).toBe('cancelled');
    expect(denied.state.history).toContainEqual(
      expect.objectContaining({ role: 'tool', tool: 'send_email', error: 'denied by human: not today' }),
    );
    expect(sent).toHaveLength(1);

    const small = Agent.resume(blob, { ...options, maxSteps: 2 });
    expect(await small.decide(true)).toBe('budget_exhausted');
    expect(small.state.stoppedBy).toBe('steps');
    expect(sent).toEqual([
      { to: 'ops@example.com', key: 'run-1:2' },
      { to: 'ops@example.com', key: 'run-1:2' },
    ]);
  });

  it('records the history in the contract shapes', async () => {
    const { options } = setup();
    const agent = new Agent({ ...options, runId: 'run-1' });
    await agent.start('email ops');
    await agent.decide(true, 'fine', { by: 'alice' });
    const history = agent.state.history;
    expect(history[0]).toEqual({ role: 'user', content: 'email ops' });
    expect(history[1]).toEqual({ role: 'assistant', tool: 'search', args: { q: 'refund policy' } });
    expect(history[2]).toEqual({
      role: 'tool',
      tool: 'search',
      result: { hits: ['refund policy for refund policy: 30 days'] },
    });
    expect(history[3]).toMatchObject({ role: 'assistant', tool: 'send_email' });
    expect(history[4]).toMatchObject({
      role: 'tool',
      tool: 'send_email',
      result: { sent: true },
      approval: { approved: true, by: 'alice', note: 'fine', callId: idLike('run-1:2#1') },
    });
    expect(history[5]).toEqual({ role: 'assistant', final: 'emailed' });
    expect(agent.state.steps).toBe(3);
  });
});
