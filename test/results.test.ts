import { describe, expect, it } from 'vitest';
import { Agent } from '../src/index.js';
import { ManualClock } from '../src/testing/index.js';
import { sequence, until } from './support/helpers.js';

describe('tool results that are not JSON become error observations', () => {
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  const cases: [string, () => unknown, string][] = [
    ['a BigInt', () => 1n, 'result is a bigint'],
    ['a nested BigInt', () => ({ n: [1, 2n] }), 'result.n[1] is a bigint'],
    ['a cycle', () => cycle, 'result.self is a cycle'],
    ['a function', () => () => 1, 'result is a function'],
    ['undefined', () => undefined, 'result is undefined'],
    ['a nested undefined', () => ({ a: undefined }), 'result.a is undefined'],
    ['NaN', () => Number.NaN, 'result is NaN'],
    ['Infinity', () => ({ x: Number.POSITIVE_INFINITY }), 'result.x is Infinity'],
    ['a Map', () => new Map(), 'result is an instance of Map, not a plain object'],
    ['a Date', () => ({ when: new Date(0) }), 'result.when is an instance of Date, not a plain object'],
    ['a symbol', () => Symbol('s'), 'result is a symbol'],
    ['a lone surrogate', () => 'a\ud800b', 'result is a string with a lone surrogate'],
    [
      'a throwing getter',
      () => ({
        get x() {
          throw new Error('nope');
        },
      }),
      'result.x could not be read: Error: nope',
    ],
  ];
  for (const [name, value, reason] of cases) {
    it(name, async () => {
      const agent = new Agent({ policy: sequence({ tool: 't' }, { final: 'ok' }), tools: [{ name: 't', fn: value }] });
      expect(await agent.start('go')).toBe('done');
      expect(agent.state.history[2]).toEqual({
        role: 'tool',
        tool: 't',
        error: `TypeError: tool result is not JSON: ${reason}`,
      });
      const blob = agent.checkpoint();
      expect(() => JSON.parse(blob)).not.toThrow();
      expect(Agent.resume(blob, { policy: sequence(), tools: [] }).checkpoint()).toBe(blob);
    });
  }

  it('keeps JSON results as a copy, with -0 as 0 and null prototypes allowed', async () => {
    const shared = { list: [1] };
    const bare = Object.assign(Object.create(null), { a: 1 });
    const agent = new Agent({
      policy: sequence({ tool: 't' }, { final: 'ok' }),
      tools: [{ name: 't', fn: () => ({ shared, z: -0, bare, u: 'é😀' }) }],
    });
    await agent.start('go');
    shared.list.push(2);
    expect(agent.state.history[2]).toEqual({
      role: 'tool',
      tool: 't',
      result: { shared: { list: [1] }, z: 0, bare: { a: 1 }, u: 'é😀' },
    });
    expect(Object.is((agent.state.history[2] as unknown as { result: { z: number } }).result.z, 0)).toBe(true);
  });
});

describe('tool timeouts', () => {
  it('abort the tool signal and record a TimeoutError', async () => {
    const clock = new ManualClock();
    let signal: AbortSignal | undefined;
    const tool = {
      name: 'slow',
      timeoutMs: 5000,
      fn: (_a: unknown, _k: string, ctx: { signal: AbortSignal }) => {
        signal = ctx.signal;
        return new Promise(() => {});
      },
    };
    const agent = new Agent({ clock, policy: sequence({ tool: 'slow' }, { final: 'gave up' }), tools: [tool] });
    const done = agent.start('go');
    await until(() => clock.sleepers === 1);
    clock.advance(4999);
    expect(signal?.aborted).toBe(false);
    clock.advance(1);
    expect(await done).toBe('done');
    expect(signal?.aborted).toBe(true);
    expect(agent.state.history[2]).toEqual({
      role: 'tool',
      tool: 'slow',
      error: 'TimeoutError: tool slow timed out after 5000 ms',
    });
    expect(agent.state.activeMs).toBe(5000);
  });

  it('a tool that finishes in time clears its timer', async () => {
    const clock = new ManualClock();
    const agent = new Agent({
      clock,
      policy: sequence({ tool: 'quick' }, { final: 'ok' }),
      tools: [{ name: 'quick', timeoutMs: 10, fn: () => 1 }],
    });
    expect(await agent.start('go')).toBe('done');
    expect(clock.sleepers).toBe(0);
    expect(agent.state.history[2]).toEqual({ role: 'tool', tool: 'quick', result: 1 });
  });

  it('works with the real clock too', async () => {
    const tool = { name: 'slow', timeoutMs: 20, fn: () => new Promise(() => {}) };
    const agent = new Agent({ policy: sequence({ tool: 'slow' }, { final: 'x' }), tools: [tool] });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.history[2]).toMatchObject({ error: 'TimeoutError: tool slow timed out after 20 ms' });
  });
});
