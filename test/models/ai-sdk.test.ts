import { createRequire } from 'node:module';
import { createOpenAI } from '@ai-sdk/openai';
import { defaultSettingsMiddleware, wrapLanguageModel } from 'ai';
import * as aiTest from 'ai/test';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Agent, OptionsError } from '../../src/index.js';
import { aiSdkPolicy } from '../../src/models/ai-sdk.js';
import { type FakeServer, fakeServer, fixture } from './fake-server.js';
import { adapterScenarios } from './scenarios.js';
import { history, policyContext, tools } from './support.js';

// The AI SDK's OpenAI provider on the Chat Completions API: it speaks the openai-chat fixtures.
const model = (url: string) => createOpenAI({ apiKey: 'test-key', baseURL: `${url}/v1` }).chat('gpt-4.1-mini');

/** The installed major of a package: the Node 24 run of CI installs `ai` 7 and its providers over the lock file's 6. */
const majorOf = (name: string) => Number(createRequire(import.meta.url)(`${name}/package.json`).version.split('.')[0]);
const AI = majorOf('ai');

describe('the AI SDK majors under test', () => {
  it.runIf(process.env.TOLLGATE_EXPECT_AI)('are the ones CI asked for (TOLLGATE_EXPECT_AI)', () => {
    expect(AI).toBe(Number(process.env.TOLLGATE_EXPECT_AI));
    // The provider and the interface that go with it: ai 6 with @ai-sdk/openai 3, ai 7 with 4.
    expect(majorOf('@ai-sdk/openai')).toBe(AI - 3);
    expect(majorOf('@ai-sdk/provider')).toBe(AI - 3);
  });

  it("takes ai's test model of each interface version the installed major has", async () => {
    const usage = {
      inputTokens: { total: 40, noCache: 40, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: 6, text: 6, reasoning: 0 },
    };
    const doGenerate = async () => ({
      content: [{ type: 'text' as const, text: 'The answer is 42.' }],
      finishReason: { unified: 'stop' as const, raw: 'stop' },
      usage,
      warnings: [],
    });
    const mocks = aiTest as unknown as Record<string, (new (o: object) => any) | undefined>;
    const versions = ['MockLanguageModelV3', 'MockLanguageModelV4'].filter((name) => mocks[name] !== undefined);
    expect(versions).toEqual(AI >= 7 ? ['MockLanguageModelV3', 'MockLanguageModelV4'] : ['MockLanguageModelV3']);
    for (const name of versions) {
      const Mock = mocks[name] as new (o: object) => any;
      const mock = new Mock({ doGenerate });
      const policy = aiSdkPolicy({ model: mock, tools, stream: false });
      expect(await policy(history.slice(0, 1), policyContext())).toMatchObject({ final: 'The answer is 42.' });
      expect(mock.doGenerateCalls[0].prompt[0].role).toBe('user');
    }
  });

  it('refuses a model of an interface version it does not speak, naming the ones it does', () => {
    const model = { specificationVersion: 'v2', provider: 'p', modelId: 'm', doGenerate() {}, doStream() {} };
    expect(() => aiSdkPolicy({ model: model as never, tools })).toThrow(OptionsError);
    expect(() => aiSdkPolicy({ model: model as never, tools })).toThrow(
      /interface v3 or v4 .* this one has version "v2"/,
    );
    const bare = { provider: 'p', modelId: 'm', doGenerate() {}, doStream() {} };
    expect(() => aiSdkPolicy({ model: bare as never, tools })).toThrow(/this one has no version/);
  });
});

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
    // An error result goes as the interface's error output; the provider of ai 7 wraps it in JSON.
    const failed = (text: string) => (AI >= 7 ? JSON.stringify({ error: text }) : text);
    expect(messages.filter((m: any) => m.role === 'tool').map((m: any) => [m.tool_call_id, m.content])).toEqual([
      ['call_a', '{"order":"A-1001","damaged":true}'],
      ['call_b', failed('Error: denied by human: too much')],
      [
        'call_tg_1',
        'A human edited the arguments before the call ran; it ran with {"order":"A-1001","amount":129}.\nok',
      ],
      ['call_tg_2', failed('Error: approval expired')],
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
