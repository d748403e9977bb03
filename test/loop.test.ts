import { describe, expect, it } from 'vitest';
import { Agent } from '../src/index.js';
import { ManualClock } from '../src/testing/index.js';
import { last, recorder, sequence } from './support/helpers.js';

describe('the loop', () => {
  it('asks the policy, runs tools, appends results, until a final answer', async () => {
    const add = recorder('add', {}, ({ a, b }) => a + b);
    const policy = sequence({ tool: 'add', args: { a: 1, b: 2 } }, { final: 'three' });
    const agent = new Agent({ policy, tools: [add.tool] });
    expect(await agent.start('add')).toBe('done');
    expect(agent.state.answer).toBe('three');
    expect(agent.state.history).toEqual([
      { role: 'user', content: 'add' },
      { role: 'assistant', tool: 'add', args: { a: 1, b: 2 } },
      { role: 'tool', tool: 'add', result: 3 },
      { role: 'assistant', final: 'three' },
    ]);
    expect(add.calls).toEqual([{ args: { a: 1, b: 2 }, key: `${agent.runId}:1` }]);
    expect(agent.state.steps).toBe(2);
  });

  it('turns a throwing tool into an error observation the model sees', async () => {
    class QueryError extends Error {
      override name = 'QueryError';
    }
    const search = recorder('search', {}, () => {
      throw new QueryError('empty query');
    });
    const policy = sequence({ tool: 'search', args: {} }, { final: 'gave up' });
    const agent = new Agent({ policy, tools: [search.tool] });
    expect(await agent.start('find')).toBe('done');
    expect(agent.state.history[2]).toEqual({ role: 'tool', tool: 'search', error: 'QueryError: empty query' });
    expect(last(policy.calls[1] ?? [])).toEqual({ role: 'tool', tool: 'search', error: 'QueryError: empty query' });
  });

  it('turns a thrown non-Error into an error observation', async () => {
    const bad = recorder('bad', {}, () => {
      throw 'just a string';
    });
    const agent = new Agent({ policy: sequence({ tool: 'bad' }, { final: 'x' }), tools: [bad.tool] });
    await agent.start('go');
    expect(agent.state.history[2]).toEqual({ role: 'tool', tool: 'bad', error: 'Error: just a string' });
  });

  it('tells the model about an unknown tool and goes on', async () => {
    const policy = sequence({ tool: 'nope', args: { x: 1 } }, { final: 'ok' });
    const agent = new Agent({ policy, tools: [] });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.history.slice(1, 3)).toEqual([
      { role: 'assistant', tool: 'nope', args: { x: 1 } },
      { role: 'tool', tool: 'nope', error: 'unknown tool nope' },
    ]);
    expect(agent.state.steps).toBe(2);
  });

  it('passes the key, run id, step and an AbortSignal to tools', async () => {
    let seen: unknown;
    const tool = {
      name: 't',
      fn: (_a: unknown, key: string, ctx: any) => {
        seen = { key, ctx };
      },
    };
    const agent = new Agent({ runId: 'r', policy: sequence({ tool: 't' }, { final: 1 }), tools: [tool] });
    await agent.start('go');
    expect(seen).toMatchObject({ key: 'r:1', ctx: { runId: 'r', step: 1, key: 'r:1', approvedCallId: null } });
    expect((seen as any).ctx.signal).toBeInstanceOf(AbortSignal);
  });

  it('gives the policy a copy: changing it does not change the run', async () => {
    const policy = sequence((h: unknown) => h, { final: 'done' });
    const agent = new Agent({
      tools: [],
      policy: (history, ctx) => {
        history.push({ role: 'user', content: 'injected' });
        expect(() => {
          (history[0] as { content: string }).content = 'changed';
        }).toThrow(TypeError);
        return policy(history, ctx);
      },
    });
    await agent.start('original');
    expect(agent.state.history[0]).toEqual({ role: 'user', content: 'original' });
    expect(agent.state.history.filter((e) => 'content' in e && e.content === 'injected')).toEqual([]);
  });

  it('gives the tool its own copy of the args', async () => {
    const tool = { name: 't', fn: (args: { list: number[] }) => args.list.push(99) };
    const agent = new Agent({ policy: sequence({ tool: 't', args: { list: [1] } }, { final: 1 }), tools: [tool] });
    await agent.start('go');
    expect(agent.state.history[1]).toEqual({ role: 'assistant', tool: 't', args: { list: [1] } });
    expect(agent.state.history[2]).toEqual({ role: 'tool', tool: 't', result: 2 });
  });

  it('answers with any JSON final, including null', async () => {
    const agent = new Agent({ policy: sequence({ final: null }), tools: [] });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.answer).toBeNull();
    expect(agent.state.history[1]).toEqual({ role: 'assistant', final: null });
  });

  it('state is a copy', async () => {
    const agent = new Agent({ policy: sequence({ final: 'a' }), tools: [] });
    await agent.start('go');
    const state = agent.state;
    state.history.push({ role: 'user', content: 'x' });
    state.steps = 99;
    expect(agent.state.history).toHaveLength(2);
    expect(agent.state.steps).toBe(1);
  });
});

describe('malformed policy output', () => {
  const cases: [string, unknown, string][] = [
    ['a string', 'call search', 'malformed action: expected an object, got string'],
    ['null', null, 'malformed action: expected an object, got null'],
    ['an array', [1], 'malformed action: expected an object, got an array'],
    ['both tool and final', { tool: 't', final: 'x' }, 'malformed action: has both tool and final'],
    ['neither', { usage: { inputTokens: 1, outputTokens: 1 } }, 'malformed action: has neither tool nor final'],
    ['args not an object', { tool: 't', args: [1, 2] }, 'malformed action: args must be an object'],
    ['args a string', { tool: 't', args: 'x=1' }, 'malformed action: args must be an object'],
    ['tool not a string', { tool: 42 }, 'malformed action: tool must be a non-empty string'],
    ['args not JSON', { tool: 't', args: { n: 10n } }, 'malformed action: args.n is a bigint'],
    ['final not JSON', { final: () => 1 }, 'malformed action: final is a function'],
  ];
  for (const [name, action, error] of cases) {
    it(`${name} becomes an error observation and counts a step`, async () => {
      const t = recorder('t');
      const agent = new Agent({ policy: sequence(action, { final: 'ok' }), tools: [t.tool] });
      expect(await agent.start('go')).toBe('done');
      expect(agent.state.history[1]).toMatchObject({ role: 'tool', error });
      expect(agent.state.steps).toBe(2);
      expect(t.calls).toEqual([]);
    });
  }

  it('still counts the tokens a malformed action reports', async () => {
    const agent = new Agent({
      policy: sequence(
        { usage: { inputTokens: 5, outputTokens: 2 } },
        { final: 1, usage: { inputTokens: 0, outputTokens: 0 } },
      ),
      tools: [],
    });
    await agent.start('go');
    expect(agent.state.usage).toEqual({ inputTokens: 5, outputTokens: 2, costUsd: 0 });
  });
});

describe('a policy that throws', () => {
  it('is retried with backoff, then the run fails with the error kept; run() tries again', async () => {
    const clock = new ManualClock();
    let calls = 0;
    let healthy = false;
    const agent = new Agent({
      clock,
      policyRetries: 2,
      retryDelayMs: 100,
      tools: [],
      policy: (_h, ctx) => {
        calls++;
        if (!healthy) throw new RangeError(`overloaded (attempt ${ctx.attempt})`);
        return { final: 'ok' };
      },
    });
    const started = agent.start('go');
    await until(() => clock.sleepers === 1);
    expect(calls).toBe(1);
    clock.advance(99);
    expect(clock.sleepers).toBe(1); // backoff not over yet
    clock.advance(1);
    await until(() => clock.sleepers === 1 && calls === 2);
    clock.advance(200); // doubled
    expect(await started).toBe('failed');
    expect(calls).toBe(3);
    expect(agent.state.error).toBe('RangeError: overloaded (attempt 2)');
    expect(agent.state.steps).toBe(0);
    const blob = agent.checkpoint();
    healthy = true;
    expect(await Agent.resume(blob, { policy: () => ({ final: 'later' }), tools: [] }).run()).toBe('done');
    expect(await agent.run()).toBe('done');
    expect(agent.state.error).toBeNull();
    expect(agent.state.answer).toBe('ok');
  });

  it('with no retries fails on the first throw', async () => {
    let calls = 0;
    const agent = new Agent({
      policyRetries: 0,
      tools: [],
      policy: () => {
        calls++;
        throw new Error('boom');
      },
    });
    expect(await agent.start('go')).toBe('failed');
    expect(calls).toBe(1);
    expect(agent.state.error).toBe('Error: boom');
  });
});

async function until(check: () => boolean) {
  for (let i = 0; i < 1000 && !check(); i++) await new Promise((r) => setImmediate(r));
  expect(check()).toBe(true);
}
