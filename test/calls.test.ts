/**
 * Issue 12: several tool calls in one step. Each call is its own unit (key, approval, expiry,
 * crash rule); pure calls run at once in call order, the others wait; the policy is asked again
 * only when every call has an outcome; the history records the step in call order.
 */
import { describe, expect, it } from 'vitest';
import { nextBatch } from '../machines/calls.js';
import type { StepCall } from '../machines/types.js';
import { Agent, type HistoryEntry, OptionsError } from '../src/index.js';
import { ManualClock } from '../src/testing/index.js';
import { gate, idLike, recorder, sequence, until } from './support/helpers.js';

function setup() {
  const look = recorder('look', {}, (a) => ({ found: a.q }));
  const pay = recorder('pay', { sideEffect: true }, (a) => ({ paid: a.cents }));
  const mail = recorder('mail', { sideEffect: true, idempotent: true }, () => 'sent');
  return { look, pay, mail, tools: [look.tool, pay.tool, mail.tool] };
}

const threeCalls = {
  calls: [
    { tool: 'look', args: { q: 'order 7' }, id: 'call_a' },
    { tool: 'pay', args: { cents: 500 }, id: 'call_b' },
    { tool: 'mail', args: { to: 'ops' }, id: 'call_c' },
  ],
  text: 'Looking it up and paying.',
};

describe('a step with several calls', () => {
  it('runs the pure call at once, asks for the others, and waits for every outcome before asking again', async () => {
    const { look, pay, mail, tools } = setup();
    const policy = sequence(threeCalls, { final: 'done' });
    const agent = new Agent({ runId: 'r', policy, tools });
    expect(await agent.start('refund order 7')).toBe('awaiting_approval');
    expect(look.calls).toEqual([{ args: { q: 'order 7' }, key: 'r:1.1' }]);
    expect(pay.calls).toEqual([]);
    const { pendingCalls, pending } = agent.state;
    expect(pendingCalls.map((p) => [p.key, p.tool])).toEqual([
      ['r:1.2', 'pay'],
      ['r:1.3', 'mail'],
    ]);
    expect(pending).toEqual(pendingCalls[0]);
    expect(pendingCalls[0]?.id).toEqual(idLike('r:1.2#1'));
    // The policy has been asked once: the step is not over.
    expect(policy.calls).toHaveLength(1);
    // Only the assistant entry so far: tool entries come in call order when the step ends.
    expect(agent.state.history).toHaveLength(2);

    // Decide one: the other stays pending, and the policy is still not asked. The approved mail
    // waits too: calls take effect in their order, and the payment before it is undecided.
    const [payCall, mailCall] = pendingCalls as [(typeof pendingCalls)[0], (typeof pendingCalls)[0]];
    expect(await agent.decide({ [mailCall.id]: { approve: true, note: 'ok' } }, { by: 'ann' })).toBe(
      'awaiting_approval',
    );
    expect(mail.calls).toEqual([]);
    expect(agent.state.pendingCalls.map((p) => p.id)).toEqual([payCall.id]);
    expect(policy.calls).toHaveLength(1);

    expect(await agent.decide({ [payCall.id]: { approve: false, note: 'too much' } }, { by: 'bob' })).toBe('done');
    expect(pay.calls).toEqual([]);
    expect(mail.calls).toEqual([{ args: { to: 'ops' }, key: 'r:1.3' }]);
    expect(policy.calls).toHaveLength(2);
    const h = agent.state.history;
    expect(h[1]).toEqual({
      role: 'assistant',
      calls: [
        { id: 'call_a', tool: 'look', args: { q: 'order 7' } },
        { id: 'call_b', tool: 'pay', args: { cents: 500 } },
        { id: 'call_c', tool: 'mail', args: { to: 'ops' } },
      ],
      text: 'Looking it up and paying.',
    });
    expect(h.slice(2, 5)).toEqual([
      { role: 'tool', tool: 'look', id: 'call_a', result: { found: 'order 7' } },
      {
        role: 'tool',
        tool: 'pay',
        id: 'call_b',
        error: 'denied by human: too much',
        approval: expect.objectContaining({ approved: false, by: 'bob', callId: payCall.id }),
      },
      {
        role: 'tool',
        tool: 'mail',
        id: 'call_c',
        result: 'sent',
        approval: expect.objectContaining({ approved: true, by: 'ann', callId: mailCall.id }),
      },
    ]);
    // The policy's second call saw the whole step.
    expect((policy.calls[1] as HistoryEntry[]).length).toBe(5);
  });

  it('calls without model ids are paired by their keys', async () => {
    const { tools } = setup();
    const agent = new Agent({
      runId: 'r',
      policy: sequence(
        {
          calls: [
            { tool: 'look', args: { q: 1 } },
            { tool: 'look', args: { q: 2 } },
          ],
        },
        { final: 1 },
      ),
      tools,
    });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.history[1]).toEqual({
      role: 'assistant',
      calls: [
        { id: 'r:1.1', tool: 'look', args: { q: 1 } },
        { id: 'r:1.2', tool: 'look', args: { q: 2 } },
      ],
    });
    expect(agent.state.history.slice(2, 4).map((e) => (e as { id: string }).id)).toEqual(['r:1.1', 'r:1.2']);
  });

  it('a step with one call records the seed entries, with the model id and text when given', async () => {
    const { tools } = setup();
    const agent = new Agent({
      runId: 'r',
      policy: sequence(
        { calls: [{ tool: 'look', args: { q: 1 }, id: 'x1' }], text: 'hm' },
        { tool: 'look', args: { q: 2 } },
        { final: 1 },
      ),
      tools,
    });
    await agent.start('go');
    expect(agent.state.history.slice(1)).toEqual([
      { role: 'assistant', tool: 'look', args: { q: 1 }, id: 'x1', text: 'hm' },
      { role: 'tool', tool: 'look', id: 'x1', result: { found: 1 } },
      { role: 'assistant', tool: 'look', args: { q: 2 } },
      { role: 'tool', tool: 'look', result: { found: 2 } },
      { role: 'assistant', final: 1 },
    ]);
  });

  it('an unknown tool among several is an observation for that call only', async () => {
    const { look, tools } = setup();
    const agent = new Agent({
      runId: 'r',
      policy: sequence({ calls: [{ tool: 'teleport' }, { tool: 'look', args: { q: 'x' } }] }, { final: 1 }),
      tools,
    });
    expect(await agent.start('go')).toBe('done');
    expect(look.calls).toHaveLength(1);
    expect(agent.state.history.slice(2, 4)).toEqual([
      { role: 'tool', tool: 'teleport', id: 'r:1.1', error: 'unknown tool teleport' },
      { role: 'tool', tool: 'look', id: 'r:1.2', result: { found: 'x' } },
    ]);
  });

  const malformed: [string, unknown, string][] = [
    ['an empty list', { calls: [] }, 'calls must be a non-empty array'],
    ['calls and tool', { calls: [{ tool: 'look' }], tool: 'look' }, 'has both tool and calls'],
    ['a call without a tool', { calls: [{ tool: 'look' }, { args: {} }] }, 'calls[1].tool must be a non-empty string'],
    ['arguments that are not JSON', { calls: [{ tool: 'look', args: { n: 1n } }] }, 'calls[0].args.n is a bigint'],
    [
      'a repeated id',
      {
        calls: [
          { tool: 'look', id: 'a' },
          { tool: 'look', id: 'a' },
        ],
      },
      'calls[1].id repeats the id of an earlier call',
    ],
    [
      'text that is not a string',
      { calls: [{ tool: 'look' }], text: 5 },
      'text must be a string (without lone surrogates)',
    ],
    [
      'too many calls',
      { calls: Array.from({ length: 65 }, () => ({ tool: 'look' })) },
      'calls holds more than 64 calls',
    ],
  ];
  for (const [name, action, why] of malformed) {
    it(`a malformed step (${name}) runs nothing and is one observation`, async () => {
      const { look, tools } = setup();
      const agent = new Agent({ policy: sequence(action, { final: 1 }), tools });
      expect(await agent.start('go')).toBe('done');
      expect(look.calls).toEqual([]);
      expect(agent.state.history[1]).toMatchObject({ role: 'tool', error: `malformed action: ${why}` });
    });
  }
});

describe('decisions', () => {
  async function waiting() {
    const clock = new ManualClock(Date.parse('2026-12-01T00:00:00Z'));
    const s = setup();
    const agent = new Agent({
      runId: 'r',
      clock,
      approvalTtlMs: 60_000,
      policy: sequence(
        { calls: [{ tool: 'pay', args: { cents: 1 } }, { tool: 'pay', args: { cents: 2 } }, { tool: 'mail' }] },
        { final: 'ok' },
      ),
      tools: s.tools,
    });
    expect(await agent.start('go')).toBe('awaiting_approval');
    const [a, b, c] = agent.state.pendingCalls.map((p) => p.id) as [string, string, string];
    return { ...s, agent, clock, a, b, c };
  }

  it('the legacy form needs a call id when several calls are pending', async () => {
    const { agent, a, pay } = await waiting();
    await expect(agent.decide(true, 'ok')).rejects.toThrow(OptionsError);
    await expect(agent.decide(true, 'ok')).rejects.toThrow(
      /3 calls are pending .*name the one you decide with \{ callId \}/,
    );
    expect(await agent.decide(true, 'ok', { callId: a })).toBe('awaiting_approval');
    expect(pay.calls).toEqual([{ args: { cents: 1 }, key: 'r:1.1' }]);
  });

  it('a map with one bad decision changes nothing: unknown id, expired call, bad shape', async () => {
    const { agent, clock, a, b, pay, mail } = await waiting();
    const before = agent.checkpoint();
    await expect(agent.decide({ [a]: { approve: true }, 'r:1.9#1@00': { approve: true } })).rejects.toMatchObject({
      name: 'StaleApprovalError',
      callId: 'r:1.9#1@00',
    });
    await expect(agent.decide({ [a]: { approve: 'yes' } } as never)).rejects.toThrow(
      `decide: call "${a}": approve must be true or false, got "yes"`,
    );
    await expect(agent.decide({ [a]: { approve: true, nte: 'x' } } as never)).rejects.toThrow(
      'unknown option "nte" (did you mean "note"?)',
    );
    await expect(agent.decide({ [a]: { approve: false, args: {} } } as never)).rejects.toThrow(
      'args and always go with an approval only',
    );
    await expect(agent.decide({})).rejects.toThrow('decide: decisions name no call');
    clock.advance(60_000);
    await expect(agent.decide({ [a]: { approve: true }, [b]: { approve: false } })).rejects.toMatchObject({
      name: 'ApprovalExpiredError',
      callId: a,
      expiresAt: '2026-12-01T00:01:00.000Z',
    });
    expect(agent.checkpoint()).toBe(before);
    expect(pay.calls).toEqual([]);
    expect(mail.calls).toEqual([]);
    // run() records the expiries, as before.
    expect(await agent.run()).toBe('done');
    expect(agent.state.history.slice(2).filter((e) => 'error' in e && e.error === 'approval expired')).toHaveLength(3);
  });

  it('each call has its own expiry: one decided in time, one run() expires later', async () => {
    const { agent, clock, a, b, c, pay } = await waiting();
    clock.advance(30_000);
    expect(await agent.decide({ [a]: { approve: true } })).toBe('awaiting_approval');
    clock.advance(30_000);
    expect(await agent.run()).toBe('done'); // b and c expired together
    expect(pay.calls).toEqual([{ args: { cents: 1 }, key: 'r:1.1' }]);
    const errors = agent.state.history.filter((e) => 'error' in e).map((e) => (e as { id: string }).id);
    expect(errors).toEqual(['r:1.2', 'r:1.3']);
    expect([b, c]).toHaveLength(2);
  });

  it('a denial never blocks its siblings', async () => {
    const { agent, a, b, c, pay, mail } = await waiting();
    expect(
      await agent.decide({ [a]: { approve: false, note: 'no' }, [b]: { approve: true }, [c]: { approve: true } }),
    ).toBe('done');
    expect(pay.calls).toEqual([{ args: { cents: 2 }, key: 'r:1.2' }]);
    expect(mail.calls).toHaveLength(1);
  });

  it('two deciders racing: the second map is refused as stale, nothing runs twice', async () => {
    const held = gate();
    const pay = recorder('pay', { sideEffect: true }, () => held.promise);
    const agent = new Agent({
      runId: 'r',
      policy: sequence(
        {
          calls: [
            { tool: 'pay', args: { n: 1 } },
            { tool: 'pay', args: { n: 2 } },
          ],
        },
        { final: 1 },
      ),
      tools: [pay.tool],
    });
    await agent.start('go');
    const [a] = agent.state.pendingCalls.map((p) => p.id) as [string];
    const first = agent.decide({ [a]: { approve: true } });
    await until(() => pay.calls.length === 1);
    await expect(agent.decide({ [a]: { approve: true } })).rejects.toMatchObject({ name: 'StaleApprovalError' });
    held.resolve('ok');
    expect(await first).toBe('awaiting_approval');
    expect(pay.calls).toHaveLength(1);
  });
});

describe('nextBatch: the calls that run side by side next', () => {
  const call = (index: number, change: Partial<StepCall> = {}): StepCall => ({
    id: `r:1.${index}#1`,
    key: `r:1.${index}`,
    step: 1,
    index,
    toolCallId: `r:1.${index}`,
    modelId: false,
    tool: 'look',
    args: {},
    attempt: 1,
    state: 'queued',
    requestedAt: null,
    expiresAt: null,
    outcome: null,
    approval: null,
    done: null,
    concurrent: true,
    ...change,
  });
  const keys = (calls: StepCall[]) => nextBatch(calls).map((c) => c.key);
  const approval = { approved: true, by: 'h', note: '', at: '2026-01-01T00:00:00.000Z', callId: 'x' };

  it('takes the queued concurrent calls from the first open one, passing over calls done', () => {
    expect(keys([call(1), call(2), call(3)])).toEqual(['r:1.1', 'r:1.2', 'r:1.3']);
    expect(keys([call(1, { state: 'done', done: { result: 1 } }), call(2), call(3)])).toEqual(['r:1.2', 'r:1.3']);
    expect(keys([call(1)])).toEqual(['r:1.1']);
    expect(keys([])).toEqual([]);
  });

  it('stops at the first open call that may not join: one alone, approved, waiting, running', () => {
    const { concurrent: _c, ...alone } = call(2);
    expect(keys([call(1), alone, call(3)])).toEqual(['r:1.1']);
    expect(keys([call(1), call(2, { approval }), call(3)])).toEqual(['r:1.1']);
    expect(keys([call(1), call(2, { state: 'pending', requestedAt: 'x' }), call(3)])).toEqual(['r:1.1']);
    expect(keys([call(1, { state: 'running' }), call(2)])).toEqual([]);
    expect(keys([call(1, { approval }), call(2)])).toEqual([]);
  });
});
