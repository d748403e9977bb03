/**
 * The behaviour every adapter must show, run against the real SDK client and the fake server with
 * each API's fixtures: parallel calls, text beside calls, refusals, streaming, retries, budgets,
 * the abort signal.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Agent, type AgentOptions, estimateTokens, type Policy, type RunEvent } from '../../src/index.js';
import { SUMMARY_PREFIX } from '../../src/models/turns.js';
import { modelOf } from '../../src/policy-model.js';
import { type FakeServer, fakeServer, fixture } from './fake-server.js';
import { joinDeltas, tools } from './support.js';

type Tools = typeof tools;

export interface ApiUnderTest {
  /** The fixtures' folder: test/fixtures/<dir>/ */
  dir: string;
  policy(url: string, options?: { stream?: boolean; maxOutputTokens?: number }): Policy<Tools>;
  /** The output-token limit a request asked for. */
  maxTokensOf(body: any): number | undefined;
  /** The wait its rate-limited fixture asks for (`retry-after-ms`, else `retry-after`). */
  retryAfterMs: number;
  /** The ids of the tool results a request sends, in order. */
  resultIdsOf(body: any): string[];
}

export function adapterScenarios(api: ApiUnderTest): void {
  let server: FakeServer;
  beforeEach(async () => {
    server = await fakeServer();
  });
  afterEach(() => server.close());

  const agentOf = (options: Partial<AgentOptions<Tools>> & { stream?: boolean; maxOutputTokens?: number } = {}) => {
    const { stream = false, maxOutputTokens, ...rest } = options;
    const modelOptions = maxOutputTokens === undefined ? { stream } : { stream, maxOutputTokens };
    return new Agent({ tools, policy: api.policy(server.url, modelOptions), policyRetries: 0, ...rest });
  };
  const f = (name: string) => fixture(`${api.dir}/${name}`);

  describe('against the real SDK client', () => {
    it('turns parallel calls into one step of several calls, and answers each by id', async () => {
      server.reply(f('parallel-calls.json'), f('final.json'));
      const agent = agentOf();
      expect(await agent.start('check A-1001 and A-1002')).toBe('done');
      const [, step, first, second] = agent.state.history;
      expect(step?.role === 'assistant' && 'calls' in step && step.calls.map((c) => c.args)).toEqual([
        { order: 'A-1001' },
        { order: 'A-1002' },
      ]);
      const ids = step && 'calls' in step ? step.calls.map((c) => c.id) : [];
      expect([first, second].map((e) => e && 'id' in e && e.id)).toEqual(ids);
      expect(api.resultIdsOf(server.requests[1]?.body)).toEqual(ids);
      expect(agent.state.answer).toBe('Refunded $129 for A-1001.');
      expect(agent.state.usage.inputTokens).toBeGreaterThan(0);
    });

    it('sends a summary (compaction) as a user message, with no result orphaned from its call', async () => {
      server.reply(f('parallel-calls.json'), f('final.json'));
      const covered: number[] = [];
      const agent = agentOf({
        compaction: {
          when: { entries: 2 },
          keep: 0,
          summarize: (entries, ctx) => {
            covered.push(entries.length, ctx.covers.to);
            return 'Looked up A-1001 and A-1002: both damaged.';
          },
        },
      });
      expect(await agent.start('check A-1001 and A-1002')).toBe('done');
      // The step (its assistant entry and both results) was summarised whole.
      expect(covered).toEqual([3, 3]);
      const sent = JSON.stringify(server.requests[1]?.body);
      expect(sent).toContain(
        JSON.stringify(`${SUMMARY_PREFIX}Looked up A-1001 and A-1002: both damaged.`).slice(1, -1),
      );
      expect(sent).toContain('check A-1001 and A-1002');
      expect(api.resultIdsOf(server.requests[1]?.body)).toEqual([]);
      const step = agent.state.history[1];
      for (const id of step && 'calls' in step ? step.calls.map((c) => c.id) : ['none']) expect(sent).not.toContain(id);
      // The journal keeps the step.
      expect(agent.state.history.map((e) => e.role)).toEqual([
        'user',
        'assistant',
        'tool',
        'tool',
        'summary',
        'assistant',
      ]);
    });

    it('keeps a step and its results whole in the view when compaction keeps it (keep: 1)', async () => {
      server.reply(f('parallel-calls.json'), f('final.json'));
      const agent = agentOf({ compaction: { when: { entries: 2 }, keep: 1, summarize: () => 'never' } });
      expect(await agent.start('check A-1001 and A-1002')).toBe('done');
      const step = agent.state.history[1];
      expect(api.resultIdsOf(server.requests[1]?.body)).toEqual(
        step && 'calls' in step ? step.calls.map((c) => c.id) : [],
      );
      expect(JSON.stringify(server.requests[1]?.body)).not.toContain('never');
    });

    it('keeps the text said beside a call, and a side effect waits for a human', async () => {
      server.reply(f('text-and-call.json'), f('final.json'));
      const agent = agentOf();
      expect(await agent.start('refund A-1001')).toBe('awaiting_approval');
      expect(agent.state.history[1]).toMatchObject({
        role: 'assistant',
        tool: 'refund',
        args: { order: 'A-1001', amount: 129 },
        text: 'The order is damaged, so I will refund it.',
      });
      expect(await agent.decide(true, 'ok')).toBe('done');
      expect(agent.state.history[2]).toMatchObject({ role: 'tool', result: { refunded: 129, order: 'A-1001' } });
    });

    it('ends the run with a refusal as its answer', async () => {
      server.reply(f('refusal.json'));
      const agent = agentOf();
      expect(await agent.start('do something bad')).toBe('done');
      expect(String(agent.state.answer)).toMatch(/can't help|declined/);
    });

    it('streams text and call pieces to observers; the history records the final message', async () => {
      server.reply({ ...f('stream-text-and-calls.sse'), delayMs: 1 }, f('stream-final.sse'));
      const agent = agentOf({ stream: true });
      const events: RunEvent[] = [];
      agent.observe((event) => events.push(event));
      expect(await agent.start('check both')).toBe('done');
      const deltas = events.flatMap((e) => (e.type === 'delta' && e.step === 1 ? [e.delta] : []));
      const joined = joinDeltas(deltas);
      expect(joined.text).toBe('Checking both orders.');
      expect(Object.values(joined.calls).map((text) => JSON.parse(text))).toEqual([
        { order: 'A-1001' },
        { order: 'A-1002' },
      ]);
      // Every delta came before the step's entry.
      const entryAt = events.findIndex((e) => e.type === 'entry' && e.index === 1);
      const lastDelta = events.map((e) => e.type === 'delta' && e.step === 1).lastIndexOf(true);
      expect(lastDelta).toBeGreaterThan(0);
      expect(lastDelta).toBeLessThan(entryAt);
      expect(agent.state.history[1]).toMatchObject({ role: 'assistant', text: 'Checking both orders.' });
      expect(agent.state.answer).toBe('Both orders are fine.');
      expect(agent.state.usage.outputTokens).toBeGreaterThan(7);
    });

    it('delivers the deltas while the stream is still open', async () => {
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      server.reply({ ...f('stream-final.sse'), hold: { after: 'Both orders', until: held } });
      const agent = agentOf({ stream: true });
      // The server sends the rest only once an observer has seen a delta: a policy that reported
      // its deltas only at the end would never finish.
      agent.observe((event) => {
        if (event.type === 'delta') release();
      });
      expect(await agent.start('go')).toBe('done');
      expect(agent.state.answer).toBe('Both orders are fine.');
    });

    it('passes the signal: a cancelled run aborts its request', async () => {
      server.reply({ hang: true });
      const agent = agentOf({ stream: true });
      const started = agent.start('go');
      await vi.waitFor(() => expect(server.requests).toHaveLength(1));
      expect(await agent.cancel('user left')).toBe('cancelled');
      await started;
      await vi.waitFor(() => expect(server.aborted).toBe(1));
    });

    it("leaves retries to the runtime: one request per attempt, after the server's retry-after", async () => {
      server.reply(f('rate-limited.json'), f('final.json'));
      const sleeps: number[] = [];
      const clock = { now: () => Date.now(), sleep: async (ms: number) => void sleeps.push(ms) };
      const agent = agentOf({ policyRetries: 1, retryDelayMs: 1, clock });
      expect(await agent.start('go')).toBe('done');
      expect(server.requests).toHaveLength(2);
      expect(sleeps).toEqual([api.retryAfterMs]);
    });

    it('fails after the runtime retries a server error, keeping the error', async () => {
      server.reply(f('server-error.json'), f('server-error.json'), f('final.json'));
      const agent = agentOf({ policyRetries: 1, retryDelayMs: 1 });
      expect(await agent.start('go')).toBe('failed');
      // The SDK's own error (OpenAI's and Anthropic's name the status; the AI SDK's the message).
      expect(agent.state.error).toMatch(/500|server had an error/);
      expect(server.requests).toHaveLength(2);
      expect(await agent.run()).toBe('done');
    });

    it('caps the output tokens to what the token budget leaves after the estimated request', async () => {
      server.reply(f('parallel-calls.json'), f('final.json'));
      const policy = api.policy(server.url, { stream: false, maxOutputTokens: 4096 });
      const agent = new Agent({ tools, policy, policyRetries: 0, maxTokens: 3000 });
      await agent.start('go');
      // The request: the goal, and what the adapter adds (instructions, tool declarations).
      const request = estimateTokens([{ role: 'user', content: 'go' }]) + (modelOf(policy)?.requestTokens ?? 0);
      expect(modelOf(policy)?.requestTokens).toBeGreaterThan(0);
      expect(api.maxTokensOf(server.requests[0]?.body)).toBe(3000 - request);
      const next = server.requests.length > 1 ? api.maxTokensOf(server.requests[1]?.body)! : 0;
      expect(next).toBeGreaterThan(0);
      expect(next).toBeLessThan(3000 - request);
    });

    it('passes the signal: a timed-out call aborts its request', async () => {
      server.reply({ hang: true });
      const agent = agentOf({ policyTimeoutMs: 100 });
      expect(await agent.start('go')).toBe('failed');
      expect(agent.state.error).toMatch(/TimeoutError/);
      await vi.waitFor(() => expect(server.aborted).toBe(1));
    });
  });
}
