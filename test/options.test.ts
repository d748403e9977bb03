/**
 * Issue 10, "Options and arguments": every options object is strict, names the key meant,
 * bounds its durations, and every options error names the call, the option and the bad value.
 */
import { describe, expect, it } from 'vitest';
import { Agent, defineAgent, OptionsError } from '../src/index.js';
import { MemoryStore } from '../src/stores/memory.js';
import { recorder, sequence } from './support/helpers.js';

const policy = sequence({ final: 1 });

function message(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(OptionsError);
    return (error as Error).message;
  }
  throw new Error('no error was thrown');
}

describe('unknown keys are errors that name the key meant', () => {
  it('new Agent: maxStep is not maxSteps (it would have given 8 steps)', () => {
    expect(message(() => new Agent({ policy, tools: [], maxStep: 1 } as never))).toBe(
      'new Agent: unknown option "maxStep" (did you mean "maxSteps"?)',
    );
  });

  it('a tool: sideEfect is not sideEffect (it would have removed the approval gate)', async () => {
    const pay = recorder('pay');
    const tools = [{ ...pay.tool, sideEfect: true }];
    expect(message(() => new Agent({ policy, tools } as never))).toBe(
      'new Agent: tools[0] ("pay"): unknown tool option "sideEfect" (did you mean "sideEffect"?)',
    );
  });

  it('a key far from every option lists the known ones', () => {
    expect(message(() => new Agent({ policy, tools: [], colour: 'red' } as never))).toMatch(
      /^new Agent: unknown option "colour" \(known: policy, tools, clock, .*store\)$/,
    );
  });

  it('Agent.resume, Agent.load, extendBudget and defineAgent are strict too', async () => {
    const agent = new Agent({ runId: 'r', policy, tools: [] });
    const blob = agent.checkpoint();
    expect(message(() => Agent.resume(blob, { policy, tools: [], maxTokns: 5 } as never))).toBe(
      'Agent.resume: unknown option "maxTokns" (did you mean "maxTokens"?)',
    );
    const store = new MemoryStore();
    await expect(Agent.load(store, 'r', { policy, tools: [], retryDelay: 1 } as never)).rejects.toThrow(
      'Agent.load: unknown option "retryDelay" (did you mean "retryDelayMs"?)',
    );
    expect(message(() => agent.extendBudget({ maxStep: 3 } as never))).toBe(
      'extendBudget: unknown option "maxStep" (did you mean "maxSteps"?)',
    );
    expect(message(() => defineAgent({ name: 'a', policy, tools: [], descripton: 'x' } as never))).toBe(
      'defineAgent: unknown option "descripton" (did you mean "description"?)',
    );
    // runId and store belong to a run, not to a definition.
    expect(message(() => defineAgent({ name: 'a', policy, tools: [], runId: 'r' } as never))).toMatch(
      /^defineAgent: unknown option "runId"/,
    );
  });

  it('Agent.resume with a store is refused, pointing to Agent.load', () => {
    const blob = new Agent({ policy, tools: [] }).checkpoint();
    expect(message(() => Agent.resume(blob, { policy, tools: [], store: new MemoryStore() } as never))).toMatch(
      /^Agent\.resume: store is not an option here: Agent\.load\(store, runId, options\)/,
    );
  });

  it('a class-based tool may keep state in its own fields', async () => {
    class Counter {
      name = 'count';
      calls = 0;
      fn() {
        return ++this.calls;
      }
    }
    const agent = new Agent({ policy: sequence({ tool: 'count' }, { final: 1 }), tools: [new Counter()] });
    expect(await agent.start('go')).toBe('done');
  });
});

describe('numbers are bounded where they become timers and dates', () => {
  const cases: [string, object, string][] = [
    [
      'a tool timeout Node would fire after 1 ms',
      { tools: [{ name: 't', fn: () => 1, timeoutMs: 3e9 }] },
      'new Agent: tools[0].timeoutMs must be a number of milliseconds > 0 and ≤ 2147483647, got 3000000000',
    ],
    [
      'an approval TTL beyond any date',
      { approvalTtlMs: 1e16 },
      'new Agent: approvalTtlMs must be a number of milliseconds > 0 and ≤ 315360000000 (10 years), or null for never, got 10000000000000000',
    ],
    [
      'a policy timeout beyond a timer',
      { policyTimeoutMs: 2 ** 31 },
      'new Agent: policyTimeoutMs must be a number of milliseconds > 0 and ≤ 2147483647, or null for none, got 2147483648',
    ],
    [
      'a retry delay beyond a timer',
      { retryDelayMs: Number.POSITIVE_INFINITY },
      'new Agent: retryDelayMs must be a number of milliseconds ≥ 0 and ≤ 2147483647, got Infinity',
    ],
    ['a negative step budget', { maxSteps: -1 }, 'new Agent: maxSteps must be a whole number ≥ 0, got -1'],
    [
      'a fractional token budget',
      { maxTokens: 2.5 },
      'new Agent: maxTokens must be a whole number ≥ 0, or null for no limit, got 2.5',
    ],
    [
      'a NaN time budget',
      { maxActiveMs: Number.NaN },
      'new Agent: maxActiveMs must be a number of milliseconds ≥ 0, or null for no limit, got NaN',
    ],
    [
      'a string run id',
      { runId: 7 },
      'new Agent: runId must be a string of 1 to 200 characters, without control characters or lone surrogates, got 7',
    ],
  ];
  for (const [name, options, expected] of cases) {
    it(name, () => {
      expect(message(() => new Agent({ policy, tools: [], ...options } as never))).toBe(expected);
    });
  }

  it('the largest allowed values are accepted', () => {
    const agent = new Agent({
      policy,
      tools: [{ name: 't', fn: () => 1, timeoutMs: 2 ** 31 - 1 }],
      approvalTtlMs: 315_360_000_000,
      policyTimeoutMs: 2 ** 31 - 1,
    });
    expect(agent.status).toBe('idle');
  });

  it('an approval requested with the longest TTL has a representable expiry', async () => {
    const send = recorder('send', { sideEffect: true });
    const agent = new Agent({ policy: sequence({ tool: 'send' }), tools: [send.tool], approvalTtlMs: 315_360_000_000 });
    expect(await agent.start('go')).toBe('awaiting_approval');
    expect(Date.parse(agent.state.pending?.expiresAt ?? '')).toBeGreaterThan(Date.now());
  });
});

describe('messages name the call, the option and the value, once', () => {
  it('extendBudget has no doubled prefix and shows the value', () => {
    const agent = new Agent({ policy, tools: [] });
    expect(message(() => agent.extendBudget({ maxSteps: -3 }))).toBe(
      'extendBudget: maxSteps must be a whole number ≥ 0, got -3',
    );
    expect(message(() => agent.extendBudget(null as never))).toBe('extendBudget: options must be an object, got null');
  });

  it('a long string value is shown shortened', () => {
    const long = 'x'.repeat(500);
    expect(message(() => new Agent({ policy, tools: [], runId: long }))).toMatch(/got "x{50,60}…" \(500 characters\)$/);
  });
});
