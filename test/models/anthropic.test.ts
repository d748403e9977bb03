import Anthropic from '@anthropic-ai/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Agent } from '../../src/index.js';
import { anthropicPolicy } from '../../src/models/anthropic.js';
import { type FakeServer, fakeServer, fixture } from './fake-server.js';
import { adapterScenarios } from './scenarios.js';
import { history, policyContext, tools } from './support.js';

const client = (url: string) => new Anthropic({ apiKey: 'test-key', baseURL: url });

describe('anthropicPolicy', () => {
  adapterScenarios({
    dir: 'anthropic',
    policy: (url, options) => anthropicPolicy({ client: client(url), model: 'claude-sonnet-4-5', tools, ...options }),
    retryAfterMs: 1000,
    maxTokensOf: (body) => body.max_tokens,
    resultIdsOf: (body) =>
      body.messages.flatMap((m: any) =>
        Array.isArray(m.content)
          ? m.content.filter((b: any) => b.type === 'tool_result').map((b: any) => b.tool_use_id)
          : [],
      ),
  });

  let server: FakeServer;
  beforeEach(async () => {
    server = await fakeServer();
  });
  afterEach(() => server.close());

  it('maps every kind of history entry to messages the API accepts', async () => {
    server.reply(fixture('anthropic/final.json'));
    const policy = anthropicPolicy({
      client: client(server.url),
      model: 'claude-sonnet-4-5',
      tools,
      instructions: 'You are a support agent.',
      stream: false,
    });
    await policy(history, policyContext());
    const body = server.requests[0]?.body;
    expect(server.requests[0]?.path).toBe('/v1/messages');
    expect(body).toMatchObject({ model: 'claude-sonnet-4-5', system: 'You are a support agent.', max_tokens: 4096 });
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Refund the broken orders A-1001 and A-1002.' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Looking up both.' },
          { type: 'tool_use', id: 'call_a', name: 'lookup_order', input: { order: 'A-1001' } },
          { type: 'tool_use', id: 'call_b', name: 'refund', input: { order: 'A-1002', amount: 500 } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_a', content: '{"order":"A-1001","damaged":true}' },
          { type: 'tool_result', tool_use_id: 'call_b', content: 'Error: denied by human: too much', is_error: true },
        ],
      },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'call_tg_1', name: 'refund', input: { order: 'A-1001', amount: 500 } }],
      },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'call_tg_1',
            content:
              'A human edited the arguments before the call ran; it ran with {"order":"A-1001","amount":129}.\nok',
          },
          {
            type: 'text',
            text: 'Your last reply could not be used (malformed action: args must be an object). Reply with tool calls (their arguments a JSON object that fits the tool) or with a final answer.',
          },
        ],
      },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'call_tg_2', name: 'refund', input: { order: 'A-1002', amount: 19 } }],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_tg_2', content: 'Error: approval expired', is_error: true },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'Refunded A-1001.' }] },
      { role: 'user', content: [{ type: 'text', text: 'And A-1002?' }] },
    ]);
    expect(body.tools).toEqual([
      {
        name: 'lookup_order',
        description: 'Look an order up by its id',
        input_schema: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
      },
      {
        name: 'refund',
        description: 'Refund an order, in dollars',
        input_schema: {
          type: 'object',
          properties: { order: { type: 'string' }, amount: { type: 'number' } },
          required: ['order', 'amount'],
        },
      },
    ]);
  });

  it('counts cache reads and writes as input, and reports the reads as cached', async () => {
    server.reply(fixture('anthropic/parallel-calls.json'), fixture('anthropic/stream-text-and-calls.sse'));
    const whole = anthropicPolicy({ client: client(server.url), model: 'm', tools, stream: false });
    expect((await whole(history.slice(0, 1), policyContext())).usage).toEqual({
      inputTokens: 1404,
      outputTokens: 96,
      cachedInputTokens: 1024,
      model: 'claude-sonnet-4-5-20250929',
    });
    const streamed = anthropicPolicy({ client: client(server.url), model: 'm', tools });
    expect((await streamed(history.slice(0, 1), policyContext())).usage).toEqual({
      inputTokens: 1404,
      outputTokens: 102,
      cachedInputTokens: 1024,
      model: 'claude-sonnet-4-5-20250929',
    });
  });

  it('makes streamed tool input that is not JSON an observation', async () => {
    const broken = (fixture('anthropic/stream-text-and-calls.sse') as { sse: string }).sse.replace(
      '1001\\"}',
      '1001\\"',
    );
    server.reply({ sse: broken }, fixture('anthropic/stream-final.sse'));
    const agent = new Agent({ tools, policy: anthropicPolicy({ client: client(server.url), model: 'm', tools }) });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.history[1]).toEqual({
      role: 'tool',
      tool: '',
      error: 'malformed action: calls[0].args must be an object',
    });
  });

  it('records an empty answer, and one cut off at max_tokens while thinking, as malformed actions, counting their usage', async () => {
    server.reply(fixture('anthropic/empty.json'), fixture('anthropic/cut-off.json'), fixture('anthropic/final.json'));
    const policy = anthropicPolicy({ client: client(server.url), model: 'm', tools, stream: false });
    const agent = new Agent({ tools, policy });
    expect(await agent.start('go')).toBe('done');
    const malformed = { role: 'tool', tool: '', error: 'malformed action: has neither tool nor final' };
    expect(agent.state.history).toEqual([
      { role: 'user', content: 'go' },
      malformed,
      malformed,
      { role: 'assistant', final: 'Refunded $129 for A-1001.' },
    ]);
    // 702 + 540 + 610 input and 512 cache reads; 3 + 64 + 12 output.
    expect(agent.state.usage).toEqual({ inputTokens: 2364, outputTokens: 79, costUsd: 0 });
    // Nothing was said, so no empty assistant turn is sent back (the API refuses one).
    for (const request of server.requests.slice(1)) {
      expect(request.body.messages.map((m: any) => m.role)).toEqual(['user']);
    }
  });

  it('fails on an error event in the stream, after the runtime retries', async () => {
    server.reply(fixture('anthropic/stream-overloaded.sse'), fixture('anthropic/overloaded.json'));
    const policy = anthropicPolicy({ client: client(server.url), model: 'm', tools });
    const agent = new Agent({ tools, policy, policyRetries: 1, retryDelayMs: 1 });
    expect(await agent.start('go')).toBe('failed');
    expect(agent.state.error).toMatch(/Overloaded|overloaded/);
    expect(server.requests).toHaveLength(2);
  });

  it('waits the retry-after of an overloaded (529) reply before the runtime tries again', async () => {
    server.reply(fixture('anthropic/overloaded.json'), fixture('anthropic/final.json'));
    const sleeps: number[] = [];
    const clock = { now: () => Date.now(), sleep: async (ms: number) => void sleeps.push(ms) };
    const policy = anthropicPolicy({ client: client(server.url), model: 'm', tools, stream: false });
    const agent = new Agent({ tools, policy, policyRetries: 1, retryDelayMs: 1, clock });
    expect(await agent.start('go')).toBe('done');
    expect(server.requests).toHaveLength(2); // the SDK's own retries are off
    expect(sleeps).toEqual([2000]);
  });
});
