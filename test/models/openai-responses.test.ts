import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Agent } from '../../src/index.js';
import { openaiPolicy } from '../../src/models/openai.js';
import { type FakeServer, fakeServer, fixture } from './fake-server.js';
import { adapterScenarios } from './scenarios.js';
import { history, policyContext, tools } from './support.js';

const client = (url: string) => new OpenAI({ apiKey: 'test-key', baseURL: `${url}/v1` });

describe('openaiPolicy (responses)', () => {
  adapterScenarios({
    dir: 'openai-responses',
    policy: (url, options) =>
      openaiPolicy({ client: client(url), model: 'gpt-4.1-mini', api: 'responses', tools, ...options }),
    retryAfterMs: 20,
    maxTokensOf: (body) => body.max_output_tokens,
    resultIdsOf: (body) => body.input.filter((i: any) => i.type === 'function_call_output').map((i: any) => i.call_id),
  });

  let server: FakeServer;
  beforeEach(async () => {
    server = await fakeServer();
  });
  afterEach(() => server.close());

  it('maps every kind of history entry to input items the API accepts', async () => {
    server.reply(fixture('openai-responses/final.json'));
    const policy = openaiPolicy({
      client: client(server.url),
      model: 'gpt-4.1-mini',
      api: 'responses',
      tools,
      instructions: 'You are a support agent.',
      stream: false,
    });
    await policy(history, policyContext());
    const body = server.requests[0]?.body;
    expect(server.requests[0]?.path).toBe('/v1/responses');
    expect(body).toMatchObject({ model: 'gpt-4.1-mini', instructions: 'You are a support agent.', store: false });
    expect(body.input).toEqual([
      { role: 'user', content: 'Refund the broken orders A-1001 and A-1002.' },
      { role: 'assistant', content: 'Looking up both.' },
      { type: 'function_call', call_id: 'call_a', name: 'lookup_order', arguments: '{"order":"A-1001"}' },
      { type: 'function_call', call_id: 'call_b', name: 'refund', arguments: '{"order":"A-1002","amount":500}' },
      { type: 'function_call_output', call_id: 'call_a', output: '{"order":"A-1001","damaged":true}' },
      { type: 'function_call_output', call_id: 'call_b', output: 'Error: denied by human: too much' },
      { type: 'function_call', call_id: 'call_tg_1', name: 'refund', arguments: '{"order":"A-1001","amount":500}' },
      {
        type: 'function_call_output',
        call_id: 'call_tg_1',
        output: 'A human edited the arguments before the call ran; it ran with {"order":"A-1001","amount":129}.\nok',
      },
      {
        role: 'user',
        content:
          'Your last reply could not be used (malformed action: args must be an object). Reply with tool calls (their arguments a JSON object that fits the tool) or with a final answer.',
      },
      { type: 'function_call', call_id: 'call_tg_2', name: 'refund', arguments: '{"order":"A-1002","amount":19}' },
      { type: 'function_call_output', call_id: 'call_tg_2', output: 'Error: approval expired' },
      { role: 'assistant', content: 'Refunded A-1001.' },
      { role: 'user', content: 'And A-1002?' },
    ]);
    expect(body.tools).toEqual([
      {
        type: 'function',
        name: 'lookup_order',
        description: 'Look an order up by its id',
        strict: false,
        parameters: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
      },
      {
        type: 'function',
        name: 'refund',
        description: 'Refund an order, in dollars',
        strict: false,
        parameters: {
          type: 'object',
          properties: { order: { type: 'string' }, amount: { type: 'number' } },
          required: ['order', 'amount'],
        },
      },
    ]);
  });

  it('reports usage with the cached input tokens, streamed or not', async () => {
    server.reply(fixture('openai-responses/parallel-calls.json'), fixture('openai-responses/stream-final.sse'));
    const whole = openaiPolicy({ client: client(server.url), model: 'm', api: 'responses', tools, stream: false });
    expect((await whole(history.slice(0, 1), policyContext())).usage).toEqual({
      inputTokens: 401,
      outputTokens: 47,
      cachedInputTokens: 384,
      model: 'gpt-4.1-mini-2025-04-14',
    });
    const streamed = openaiPolicy({ client: client(server.url), model: 'm', api: 'responses', tools });
    const ctx = policyContext();
    expect(await streamed(history.slice(0, 1), ctx)).toEqual({
      final: 'Both orders are fine.',
      usage: { inputTokens: 520, outputTokens: 7, cachedInputTokens: 0, model: 'gpt-4.1-mini-2025-04-14' },
    });
    expect(ctx.deltas).toEqual([
      { kind: 'text', text: 'Both orders' },
      { kind: 'text', text: ' are fine.' },
    ]);
  });

  it("makes a stream's error event, named or not, the API's error: thrown (for the runtime to retry)", async () => {
    // openai 7 throws an event named `error` itself, openai 6 passes it on: the adapter throws it then.
    const created =
      'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}\n\n';
    const error =
      '{"type":"error","sequence_number":1,"code":"server_error","message":"The model had an error","param":null}';
    const policy = openaiPolicy({ client: client(server.url), model: 'm', api: 'responses', tools });
    for (const event of [`event: error\ndata: ${error}\n\n`, `data: ${error}\n\n`]) {
      server.reply({ sse: created + event });
      await expect(policy(history.slice(0, 1), policyContext())).rejects.toThrow('The model had an error');
    }
  });

  it('never asks for fewer than the 16 output tokens the API takes', async () => {
    server.reply(fixture('openai-responses/final.json'));
    const policy = openaiPolicy({ client: client(server.url), model: 'm', api: 'responses', tools, stream: false });
    await policy(history.slice(0, 1), policyContext({ remaining: { steps: 1, tokens: 3, activeMs: null } }));
    expect(server.requests[0]?.body.max_output_tokens).toBe(16);
  });

  it('records an empty answer, and one cut off at max_output_tokens while reasoning, as malformed actions, counting their usage', async () => {
    server.reply(
      fixture('openai-responses/empty.json'),
      fixture('openai-responses/cut-off.json'),
      fixture('openai-responses/final.json'),
    );
    const policy = openaiPolicy({ client: client(server.url), model: 'm', api: 'responses', tools, stream: false });
    const agent = new Agent({ tools, policy });
    expect(await agent.start('go')).toBe('done');
    const malformed = { role: 'tool', tool: '', error: 'malformed action: has neither tool nor final' };
    expect(agent.state.history).toEqual([
      { role: 'user', content: 'go' },
      malformed,
      malformed,
      { role: 'assistant', final: 'Refunded $129 for A-1001.' },
    ]);
    // 655 + 655 + 610 input; 2 + 64 (all reasoning) + 12 output.
    expect(agent.state.usage).toEqual({ inputTokens: 1920, outputTokens: 78, costUsd: 0 });
  });
});
