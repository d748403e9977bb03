import { createOpenAI } from '@ai-sdk/openai';
import { defaultSettingsMiddleware, wrapLanguageModel } from 'ai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Agent } from '../../src/index.js';
import { aiSdkPolicy } from '../../src/models/ai-sdk.js';
import { type FakeServer, fakeServer, fixture } from './fake-server.js';
import { adapterScenarios } from './scenarios.js';
import { history, policyContext, tools } from './support.js';

// The AI SDK's OpenAI provider on the Chat Completions API: it speaks the openai-chat fixtures.
const model = (url: string) => createOpenAI({ apiKey: 'test-key', baseURL: `${url}/v1` }).chat('gpt-4.1-mini');

describe('aiSdkPolicy (@ai-sdk/openai, chat)', () => {
  adapterScenarios({
    dir: 'openai-chat',
    policy: (url, options) => aiSdkPolicy({ model: model(url), tools, ...options }),
    retryAfterMs: 20,
    maxTokensOf: (body) => body.max_completion_tokens ?? body.max_tokens,
    resultIdsOf: (body) => body.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.tool_call_id),
  });

  let server: FakeServer;
  beforeEach(async () => {
    server = await fakeServer();
  });
  afterEach(() => server.close());

  it('maps every kind of history entry to a prompt the provider sends as the API wants', async () => {
    server.reply(fixture('openai-chat/final.json'));
    const policy = aiSdkPolicy({
      model: model(server.url),
      tools,
      instructions: 'You are a support agent.',
      stream: false,
    });
    await policy(history, policyContext());
    const messages = server.requests[0]?.body.messages;
    expect(messages.map((m: any) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'tool',
      'assistant',
      'tool',
      'user',
      'assistant',
      'tool',
      'assistant',
      'user',
    ]);
    expect(messages[2].tool_calls.map((c: any) => [c.id, c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ['call_a', 'lookup_order', { order: 'A-1001' }],
      ['call_b', 'refund', { order: 'A-1002', amount: 500 }],
    ]);
    expect(messages.filter((m: any) => m.role === 'tool').map((m: any) => [m.tool_call_id, m.content])).toEqual([
      ['call_a', '{"order":"A-1001","damaged":true}'],
      ['call_b', 'Error: denied by human: too much'],
      [
        'call_tg_1',
        'A human edited the arguments before the call ran; it ran with {"order":"A-1001","amount":129}.\nok',
      ],
      ['call_tg_2', 'Error: approval expired'],
    ]);
    expect(server.requests[0]?.body.tools.map((t: any) => t.function.name)).toEqual(['lookup_order', 'refund']);
  });

  it('reports usage with the cached input tokens', async () => {
    server.reply(fixture('openai-chat/parallel-calls.json'));
    const policy = aiSdkPolicy({ model: model(server.url), tools, stream: false });
    const action = await policy(history.slice(0, 1), policyContext());
    expect(action.usage).toEqual({
      inputTokens: 412,
      outputTokens: 58,
      cachedInputTokens: 384,
      model: 'gpt-4.1-mini-2025-04-14',
    });
  });

  it('names the model that answered when streamed too', async () => {
    server.reply(fixture('openai-chat/stream-final.sse'));
    const policy = aiSdkPolicy({ model: model(server.url), tools });
    expect((await policy(history.slice(0, 1), policyContext())).usage?.model).toBe('gpt-4.1-mini-2025-04-14');
  });

  it('makes arguments that are not JSON an observation', async () => {
    server.reply(fixture('openai-chat/bad-arguments.json'), fixture('openai-chat/final.json'));
    const agent = new Agent({ tools, policy: aiSdkPolicy({ model: model(server.url), tools, stream: false }) });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.history[1]).toMatchObject({ role: 'tool', error: expect.stringMatching(/^malformed action/) });
  });

  it("takes a model wrapped with ai's middleware", async () => {
    server.reply(fixture('openai-chat/final.json'));
    const wrapped = wrapLanguageModel({
      model: model(server.url),
      middleware: defaultSettingsMiddleware({ settings: { temperature: 0 } }),
    });
    const policy = aiSdkPolicy({ model: wrapped, tools, stream: false });
    expect(await policy(history.slice(0, 1), policyContext())).toMatchObject({ final: 'Refunded $129 for A-1001.' });
    expect(server.requests[0]?.body.temperature).toBe(0);
  });
});
