import OpenAI from 'openai';
import { VERSION } from 'openai/version';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Agent } from '../../src/index.js';
import { openaiPolicy } from '../../src/models/openai.js';
import { type FakeServer, fakeServer, fixture, type Reply } from './fake-server.js';
import { adapterScenarios } from './scenarios.js';
import { history, policyContext, tools } from './support.js';

const client = (url: string) => new OpenAI({ apiKey: 'test-key', baseURL: `${url}/v1` });

/** The installed major of `openai`: the Node 24 run of CI installs 7 over the lock file's 6. */
const OPENAI = Number(VERSION.split('.')[0]);

describe('the openai major under test', () => {
  it('is one the adapter supports', () => {
    expect([6, 7]).toContain(OPENAI);
  });

  it.runIf(process.env.TOLLGATE_EXPECT_OPENAI)('is the one CI asked for (TOLLGATE_EXPECT_OPENAI)', () => {
    expect(OPENAI).toBe(Number(process.env.TOLLGATE_EXPECT_OPENAI));
  });
});

/** A streamed chunk of the Chat Completions API with this delta. */
const chunk = (delta: object) =>
  `data: ${JSON.stringify({
    id: 'chatcmpl-CXv1mTqN7bK2pW9rLdE4sFgH0aZ',
    object: 'chat.completion.chunk',
    created: 1764727200,
    model: 'gpt-4.1-mini-2025-04-14',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: null }],
  })}\n\n`;

describe('openaiPolicy (chat)', () => {
  adapterScenarios({
    dir: 'openai-chat',
    policy: (url, options) => openaiPolicy({ client: client(url), model: 'gpt-4.1-mini', tools, ...options }),
    retryAfterMs: 20,
    maxTokensOf: (body) => body.max_completion_tokens,
    resultIdsOf: (body) => body.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.tool_call_id),
  });

  let server: FakeServer;
  beforeEach(async () => {
    server = await fakeServer();
  });
  afterEach(() => server.close());

  it('maps every kind of history entry to messages the API accepts', async () => {
    server.reply(fixture('openai-chat/final.json'));
    const policy = openaiPolicy({
      client: client(server.url),
      model: 'gpt-4.1-mini',
      tools,
      instructions: 'You are a support agent.',
      stream: false,
    });
    await policy(history, policyContext());
    const body = server.requests[0]?.body;
    expect(server.requests[0]?.path).toBe('/v1/chat/completions');
    expect(body.model).toBe('gpt-4.1-mini');
    expect(body.stream).toBe(false);
    expect(body.messages).toEqual([
      { role: 'system', content: 'You are a support agent.' },
      { role: 'user', content: 'Refund the broken orders A-1001 and A-1002.' },
      {
        role: 'assistant',
        content: 'Looking up both.',
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'lookup_order', arguments: '{"order":"A-1001"}' } },
          {
            id: 'call_b',
            type: 'function',
            function: { name: 'refund', arguments: '{"order":"A-1002","amount":500}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: '{"order":"A-1001","damaged":true}' },
      { role: 'tool', tool_call_id: 'call_b', content: 'Error: denied by human: too much' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_tg_1',
            type: 'function',
            function: { name: 'refund', arguments: '{"order":"A-1001","amount":500}' },
          },
        ],
      },
      {
        role: 'tool',
        tool_call_id: 'call_tg_1',
        content: 'A human edited the arguments before the call ran; it ran with {"order":"A-1001","amount":129}.\nok',
      },
      {
        role: 'user',
        content:
          'Your last reply could not be used (malformed action: args must be an object). Reply with tool calls (their arguments a JSON object that fits the tool) or with a final answer.',
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_tg_2',
            type: 'function',
            function: { name: 'refund', arguments: '{"order":"A-1002","amount":19}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_tg_2', content: 'Error: approval expired' },
      { role: 'assistant', content: 'Refunded A-1001.' },
      { role: 'user', content: 'And A-1002?' },
    ]);
    expect(body.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'lookup_order',
          description: 'Look an order up by its id',
          parameters: {
            type: 'object',
            properties: { order: { type: 'string' } },
            required: ['order'],
          },
        },
      },
      {
        type: 'function',
        function: {
          name: 'refund',
          description: 'Refund an order, in dollars',
          parameters: {
            type: 'object',
            properties: { order: { type: 'string' }, amount: { type: 'number' } },
            required: ['order', 'amount'],
          },
        },
      },
    ]);
  });

  it('reports usage with the cached input tokens', async () => {
    server.reply(fixture('openai-chat/parallel-calls.json'));
    const policy = openaiPolicy({ client: client(server.url), model: 'm', tools, stream: false });
    const action = await policy(history.slice(0, 1), policyContext());
    expect(action.usage).toEqual({
      inputTokens: 412,
      outputTokens: 58,
      cachedInputTokens: 384,
      model: 'gpt-4.1-mini-2025-04-14',
    });
  });

  it('names the model that answered, streamed or not, and the one asked for when the response names none', async () => {
    const final = fixture('openai-chat/final.json') as { status: number; body: Record<string, unknown> };
    const { model: _m, ...unnamed } = final.body;
    server.reply(fixture('openai-chat/stream-final.sse'), { ...final, body: unnamed });
    const streamed = openaiPolicy({ client: client(server.url), model: 'gpt-4.1-mini', tools });
    expect((await streamed(history.slice(0, 1), policyContext())).usage?.model).toBe('gpt-4.1-mini-2025-04-14');
    const whole = openaiPolicy({ client: client(server.url), model: 'gpt-4.1-mini', tools, stream: false });
    expect((await whole(history.slice(0, 1), policyContext())).usage?.model).toBe('gpt-4.1-mini');
  });

  it("prices a run's calls by the dated model the API answers with (cost budget)", async () => {
    server.reply(fixture('openai-chat/parallel-calls.json'), fixture('openai-chat/final.json'));
    const policy = openaiPolicy({ client: client(server.url), model: 'gpt-4.1-mini', tools, stream: false });
    const price = { 'gpt-4.1-mini': { inputUsdPerMTok: 0.4, cachedInputUsdPerMTok: 0.1, outputUsdPerMTok: 1.6 } };
    const agent = new Agent({ tools, policy, price, maxCostUsd: 1 });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.steps).toBe(2);
    // 28 uncached × 0.4 + 384 cached × 0.1 + 58 output × 1.6 = 142.4 µ$, rounded up to 143; then
    // 98 × 0.4 + 512 × 0.1 + 12 × 1.6 = 109.6, rounded up to 110.
    expect(agent.state.usage.costUsd).toBe(0.000253);
    expect(agent.state.error).toBeNull();
  });

  it('makes arguments that are not JSON, and unknown tools, observations', async () => {
    server.reply(
      fixture('openai-chat/bad-arguments.json'),
      fixture('openai-chat/unknown-tool.json'),
      fixture('openai-chat/final.json'),
    );
    const policy = openaiPolicy({ client: client(server.url), model: 'm', tools, stream: false });
    const agent = new Agent({ tools, policy });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.history.slice(1, 4)).toEqual([
      { role: 'tool', tool: 'lookup_order', error: 'malformed action: args must be an object' },
      { role: 'assistant', tool: 'delete_everything', args: {}, id: 'call_Qw3eR5tY7uI9oP1aS2dF4gHj' },
      {
        role: 'tool',
        tool: 'delete_everything',
        id: 'call_Qw3eR5tY7uI9oP1aS2dF4gHj',
        error: 'unknown tool delete_everything',
      },
    ]);
    // The malformed step reaches the model as a note, never as a result without its call.
    const second = server.requests[1]?.body.messages;
    expect(second.at(-1)).toEqual({
      role: 'user',
      content: expect.stringMatching(/^Your last reply could not be used \(malformed action/),
    });
    expect(server.requests[2]?.body.messages.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'call_Qw3eR5tY7uI9oP1aS2dF4gHj',
      content: 'Error: unknown tool delete_everything',
    });
  });

  it("reads a custom tool's call, streamed or not, as a call of its name with its input as the arguments", async () => {
    // A custom tool (given through `request.tools`) is called under `custom`, not `function`: in
    // a whole message (both majors type it) and in a stream's pieces (only openai 7 types them).
    const whole = fixture('openai-chat/text-and-call.json') as { status: number; body: any };
    whole.body.choices[0].message.tool_calls = [
      { id: 'call_c1', type: 'custom', custom: { name: 'lookup_order', input: '{"order":"A-1001"}' } },
    ];
    const streamed: Reply = {
      sse: [
        chunk({ role: 'assistant', content: 'Looking it up.' }),
        chunk({
          tool_calls: [{ index: 0, id: 'call_c1', type: 'custom', custom: { name: 'lookup_order', input: '' } }],
        }),
        chunk({ tool_calls: [{ index: 0, custom: { input: '{"order":' } }] }),
        chunk({ tool_calls: [{ index: 0, custom: { input: '"A-1001"}' } }] }),
        'data: [DONE]\n\n',
      ].join(''),
    };
    server.reply(whole, streamed);
    const call = { tool: 'lookup_order', args: { order: 'A-1001' }, id: 'call_c1' };
    const policy = (stream: boolean) => openaiPolicy({ client: client(server.url), model: 'm', tools, stream });
    expect(await policy(false)(history.slice(0, 1), policyContext())).toMatchObject(call);
    const ctx = policyContext();
    expect(await policy(true)(history.slice(0, 1), ctx)).toEqual({ ...call, text: 'Looking it up.' });
    expect(ctx.deltas.filter((d) => d.kind === 'call')).toEqual([
      { kind: 'call', index: 0, id: 'call_c1', tool: 'lookup_order' },
      { kind: 'call', index: 0, argsText: '{"order":' },
      { kind: 'call', index: 0, argsText: '"A-1001"}' },
    ]);
  });

  it('records an empty answer cut off at the token limit as a malformed action, counting its usage', async () => {
    server.reply(fixture('openai-chat/empty.json'), fixture('openai-chat/final.json'));
    const policy = openaiPolicy({ client: client(server.url), model: 'm', tools, stream: false });
    const agent = new Agent({ tools, policy });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.history[1]).toEqual({
      role: 'tool',
      tool: '',
      error: 'malformed action: has neither tool nor final',
    });
    expect(agent.state.usage).toEqual({ inputTokens: 810, outputTokens: 28, costUsd: 0 });
  });
});
