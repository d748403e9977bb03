/**
 * The exact edges of a policy's action (names, ids, sizes) and of `decide`'s arguments: each
 * refusal says what was wrong, in words a user can act on, and changes nothing.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, type Tool } from '../src/index.js';
import { MAX_CALLS } from '../src/runtime/classify.js';
import { ManualClock } from '../src/testing/index.js';
import { recorder, sequence } from './support/helpers.js';

/** The observation a run records for a policy's first action, then a final answer. */
async function observed(action: unknown, tools: Tool[] = [recorder('look').tool]) {
  const agent = new Agent({ runId: 'r', tools, policy: sequence(action, { final: 'end' }) });
  const status = await agent.start('go');
  return { status, entry: agent.state.history[1], agent };
}

describe('a policy action at its edges', () => {
  it('a final answer beside an explicitly undefined calls field is a final answer', async () => {
    const { agent } = await observed({ final: 'ok', calls: undefined });
    expect(agent.state.answer).toBe('ok');
  });

  it("a malformed action's tool name is kept to 200 characters", async () => {
    const exactly = 't'.repeat(200);
    expect((await observed({ tool: exactly, final: 1 })).entry).toMatchObject({ tool: exactly });
    expect((await observed({ tool: `${exactly}u`, final: 1 })).entry).toMatchObject({ tool: exactly });
  });

  it('a call id: a string of 1 to 200 characters, else the action is malformed', async () => {
    const message = 'malformed action: calls[0].id must be a string of 1 to 200 characters';
    for (const id of ['', 'i'.repeat(201), 5, '\uD800']) {
      expect((await observed({ calls: [{ tool: 'look', id }] })).entry).toEqual({
        role: 'tool',
        tool: '',
        error: message,
      });
    }
    const long = 'i'.repeat(200);
    const { entry } = await observed({ calls: [{ tool: 'look', id: long }] });
    expect(entry).toMatchObject({ role: 'assistant', tool: 'look' });
    expect(JSON.stringify(entry)).toContain(`"${long}"`);
  });

  it(`${MAX_CALLS} calls in a step are allowed, one more is not; a call that is not an object is named`, async () => {
    const many = Array.from({ length: MAX_CALLS }, () => ({ tool: 'look' }));
    const { agent } = await observed({ calls: many });
    expect(agent.state.history.filter((e) => e.role === 'tool')).toHaveLength(MAX_CALLS);
    expect((await observed({ calls: [...many, { tool: 'look' }] })).entry).toMatchObject({
      error: `malformed action: calls holds more than ${MAX_CALLS} calls`,
    });
    expect((await observed({ calls: [{ tool: 'look' }, 5] })).entry).toMatchObject({
      error: 'malformed action: calls[1] must be an object',
    });
  });

  it('arguments the schema refuses are refused at once: a side effect is not put to a human', async () => {
    const pay = recorder('pay', { sideEffect: true, input: z.object({ amount: z.number() }) });
    const { status, agent } = await observed({ tool: 'pay', args: { amount: 'lots' } }, [pay.tool]);
    expect(status).toBe('done');
    expect(agent.state.history[2]).toMatchObject({
      role: 'tool',
      tool: 'pay',
      error: expect.stringMatching(/^invalid arguments: /),
    });
    expect(pay.calls).toEqual([]);
  });
});

describe('decide: what is wrong, exactly', () => {
  const pay = () => recorder('pay', { sideEffect: true });
  const two = {
    calls: [
      { tool: 'pay', args: { n: 1 } },
      { tool: 'pay', args: { n: 2 } },
    ],
  };

  async function paused(options: { approvalTtlMs?: number; clock?: ManualClock; tools?: Tool[] } = {}) {
    const agent = new Agent({
      runId: 'r',
      tools: options.tools ?? [pay().tool],
      policy: sequence(two, { final: 'end' }),
      ...(options.approvalTtlMs === undefined ? {} : { approvalTtlMs: options.approvalTtlMs }),
      ...(options.clock === undefined ? {} : { clock: options.clock }),
    });
    expect(await agent.start('go')).toBe('awaiting_approval');
    const [a, b] = agent.state.pendingCalls.map((c) => c.id) as [string, string];
    return { agent, a, b };
  }
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => expect.unreachable(),
      (e: unknown) => e as Error,
    );

  it('the one-call form with several pending names them all', async () => {
    const { agent, a, b } = await paused();
    expect((await failure(agent.decide(true))).message).toBe(
      `decide: 2 calls are pending (${a}, ${b}): name the one you decide with { callId }, or decide them together with decide({ [callId]: … })`,
    );
  });

  it('a call that is not pending is named with the pending ones', async () => {
    const { agent, a, b } = await paused();
    expect((await failure(agent.decide({ nope: { approve: true } }))).message).toBe(
      `decide: call "nope" is not pending (pending: ${a}, ${b})`,
    );
  });

  it('each field of a decision is checked, the call named', async () => {
    const { agent, a } = await paused();
    const at = `decide: call ${JSON.stringify(a)}`;
    expect((await failure(agent.decide({ [a]: { approve: true, bogus: 1 } } as never))).message).toMatch(
      new RegExp(`^${at}`),
    );
    expect((await failure(agent.decide({ [a]: { approve: true, note: 5 } } as never))).message).toMatch(
      new RegExp(`^${at}.*note`),
    );
    expect((await failure(agent.decide({ [a]: { approve: false, always: true } } as never))).message).toBe(
      `${at}: args and always go with an approval only`,
    );
    expect((await failure(agent.decide({ [a]: { approve: true, always: 'yes' } as never }))).message).toBe(
      `${at}: always must be true or false, got "yes"`,
    );
    expect(agent.state.pendingCalls).toHaveLength(2);
  });

  it('neither a boolean nor a map, or a map that is an array, is named as such; the error names the run once', async () => {
    const { agent } = await paused();
    const nul = await failure(agent.decide(null as never));
    expect(nul.message).toBe('decide: expected true, false or a map of decisions by call id, got null');
    expect(nul).toMatchObject({ runId: 'r' });
    const array = await failure(agent.decide([] as never));
    expect(array.message).toMatch(/^decide: decisions must be an object, got /);
    const empty = await failure(agent.decide({}));
    expect(empty).toMatchObject({ message: 'decide: decisions name no call', runId: 'r' });
    expect(empty.cause).toBeUndefined();
  });

  it('an expired call says when it expired', async () => {
    const clock = new ManualClock(Date.parse('2026-01-01T00:00:00.000Z'));
    const { agent, a } = await paused({ approvalTtlMs: 1_000, clock });
    clock.advance(2_000);
    expect((await failure(agent.decide({ [a]: { approve: true } }))).message).toBe(
      `decide: call ${JSON.stringify(a)} expired at 2026-01-01T00:00:01.000Z; nothing was decided`,
    );
  });

  it('a decision without note or by records an empty note, by "human"', async () => {
    const { agent, a, b } = await paused();
    await agent.decide({ [a]: { approve: true }, [b]: { approve: false, note: 'no' } });
    const entry = agent.state.history.find((e) => e.role === 'tool' && 'approval' in e && e.approval?.approved);
    expect(entry).toMatchObject({ approval: { by: 'human', note: '' } });
  });

  it('an edit of a call whose tool is not among the agent’s tools is refused', async () => {
    const { agent, a } = await paused();
    const blob = agent.checkpoint();
    const other = Agent.resume(blob, { policy: sequence({ final: 'x' }), tools: [] });
    expect((await failure(other.decide({ [a]: { approve: true, args: { n: 9 } } }))).message).toBe(
      `decide: call ${JSON.stringify(a)}: tool pay is not among this agent's tools`,
    );
  });

  it("an edit is put to the tool's rule with the run's context", async () => {
    const guarded = recorder('pay', {
      sideEffect: true,
      needsApproval: (args, ctx) =>
        ctx.runId === 'r' && (args as { n: number }).n > 100 ? { deny: 'too much' } : true,
    });
    const { agent, a } = await paused({ tools: [guarded.tool] });
    expect((await failure(agent.decide({ [a]: { approve: true, args: { n: 500 } } }))).message).toBe(
      `decide: call ${JSON.stringify(a)}: the tool's rule denies these arguments: too much`,
    );
  });
});
