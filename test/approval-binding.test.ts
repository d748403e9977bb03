/**
 * Issue 10, "Approvals": a call id names the exact call, so an approval can never run another
 * call; stoppedBy names the budget that stops the run now.
 */
import { createHash } from 'node:crypto';
import { sha256 } from '@noble/hashes/sha2';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { digestOf } from '../machines/calls.js';
import { callIdOf } from '../machines/index.js';
import { Agent, StaleApprovalError } from '../src/index.js';
import { ManualClock } from '../src/testing/index.js';
import { gate, recorder, until } from './support/helpers.js';

describe('the call id binds the arguments', () => {
  it('two resumes of one mid-policy checkpoint that get different arguments never share an id', async () => {
    // A checkpoint taken while the policy was deciding step 1…
    const held = gate();
    const first = new Agent({ runId: 'r', policy: () => held.promise as never, tools: [recorder('pay').tool] });
    const started = first.start('pay the invoice');
    await until(() => first.status === 'running');
    const blob = first.checkpoint();
    void first.cancel('crash');
    await started;

    // …resumed twice; the model (an attacker) answers 5 cents in one, 500,000 in the other.
    const pay = recorder('pay', { sideEffect: true });
    const small = Agent.resume(blob, { policy: () => ({ tool: 'pay', args: { cents: 5 } }), tools: [pay.tool] });
    const large = Agent.resume(blob, { policy: () => ({ tool: 'pay', args: { cents: 500_000 } }), tools: [pay.tool] });
    expect(await small.run()).toBe('awaiting_approval');
    expect(await large.run()).toBe('awaiting_approval');
    const reviewed = small.state.pending?.id as string;
    expect(large.state.pending?.key).toBe(small.state.pending?.key);
    expect(large.state.pending?.id).not.toBe(reviewed);

    // The human reviewed the small one: its id cannot approve the large one.
    await expect(large.decide(true, 'ok', { callId: reviewed })).rejects.toBeInstanceOf(StaleApprovalError);
    expect(large.status).toBe('awaiting_approval');
    expect(pay.calls).toEqual([]);
    expect(await small.decide(true, 'ok', { callId: reviewed })).toBe('awaiting_approval');
    expect(pay.calls).toEqual([{ args: { cents: 5 }, key: 'r:1' }]);
  });

  it('the id is key, attempt and a 128-bit digest of the canonical tool and arguments', () => {
    const id = callIdOf('r:1', 1, 'pay', { b: 1, a: [true, null] });
    expect(id).toMatch(/^r:1#1@[0-9a-f]{32}$/);
    // Canonical: key order does not matter; any change of tool, argument or attempt does.
    expect(callIdOf('r:1', 1, 'pay', { a: [true, null], b: 1 })).toBe(id);
    expect(callIdOf('r:1', 1, 'pay', { b: 2, a: [true, null] })).not.toBe(id);
    expect(callIdOf('r:1', 1, 'refund', { b: 1, a: [true, null] })).not.toBe(id);
    expect(callIdOf('r:1', 2, 'pay', { b: 1, a: [true, null] }).slice(6)).toBe(id.slice(6));
  });

  it('the digest is SHA-256 of the UTF-8 text, in Node and where Node’s crypto is missing (a browser)', async () => {
    const reference = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 32);
    expect(digestOf('["pay",{"a":[true,null],"b":1}]')).toBe('fa1ed5914b71c8394b8baaf9e1bca219');
    vi.resetModules();
    vi.stubGlobal('process', { ...process, getBuiltinModule: undefined });
    let browser: typeof digestOf;
    try {
      browser = (await import('../machines/calls.js')).digestOf;
    } finally {
      vi.unstubAllGlobals();
      vi.resetModules();
    }
    expect(browser).not.toBe(digestOf);
    // Where Node's is found, it is the one used.
    const hash = (algorithm: string, data: string, encoding: string) =>
      `${algorithm}/${encoding}/${data}`.padEnd(40, '.');
    vi.stubGlobal('process', {
      ...process,
      getBuiltinModule: (id: string) => (id === 'node:crypto' ? { hash } : undefined),
    });
    try {
      expect((await import('../machines/calls.js')).digestOf('x')).toBe('sha256/hex/x....................');
    } finally {
      vi.unstubAllGlobals();
      vi.resetModules();
    }
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        const expected = reference(text);
        expect(digestOf(text)).toBe(expected);
        expect(browser(text)).toBe(expected);
        expect(bytesToHex(sha256(utf8ToBytes(text)).subarray(0, 16))).toBe(expected);
      }),
      { seed: 20261204, numRuns: 300 },
    );
  });

  it('a checkpoint whose pending id does not name its call is refused', async () => {
    const pay = recorder('pay', { sideEffect: true });
    const agent = new Agent({ runId: 'r', policy: () => ({ tool: 'pay', args: { cents: 5 } }), tools: [pay.tool] });
    await agent.start('go');
    const blob = agent.checkpoint().replaceAll('"cents":5', '"cents":500000');
    expect(() => Agent.resume(blob, { policy: () => ({ final: 1 }), tools: [pay.tool] })).toThrow(
      /snapshot\.context\.calls\.0\.id: call id r:1#1@[0-9a-f]{32} does not name this call/,
    );
  });
});

describe('stoppedBy names the budget that stops the run now', () => {
  it('after extendBudget({ maxTokens }) while time is also spent, the run says time', async () => {
    const clock = new ManualClock(0);
    // One step spends both: the policy its tokens, the tool the rest of the time.
    const agent = new Agent({
      clock,
      tools: [{ name: 'slow', fn: () => clock.advance(90) }],
      maxTokens: 10,
      maxActiveMs: 100,
      policy: () => {
        clock.advance(10);
        return { tool: 'slow', usage: { inputTokens: 10, outputTokens: 0 } };
      },
    });
    expect(await agent.start('go')).toBe('budget_exhausted');
    expect(agent.state.activeMs).toBe(100);
    expect(agent.state.stoppedBy).toBe('tokens'); // both are spent; tokens is checked first
    agent.extendBudget({ maxTokens: 1_000 });
    expect(agent.state.stoppedBy).toBe('time');
    expect(await agent.run()).toBe('budget_exhausted');
    expect(agent.state.stoppedBy).toBe('time');
  });

  it('the same when the limits change at resume', async () => {
    const clock = new ManualClock(0);
    const policy = () => {
      clock.advance(10);
      return { tool: 'slow', usage: { inputTokens: 10, outputTokens: 0 } };
    };
    const tools = [{ name: 'slow', fn: () => clock.advance(90) }];
    const agent = new Agent({ clock, tools, maxTokens: 10, maxActiveMs: 100, policy });
    await agent.start('go');
    expect(agent.state.stoppedBy).toBe('tokens');
    const resumed = Agent.resume(agent.checkpoint(), { clock, tools, policy, maxTokens: 1_000 });
    expect(resumed.state).toMatchObject({ status: 'budget_exhausted', stoppedBy: 'time' });
  });
});
