/**
 * A model's reasoning as it streams: each adapter passes what its API streams of it (the AI SDK's
 * reasoning parts, Anthropic's thinking, the Responses API's reasoning summary) as `reasoning`
 * deltas, which observers see and the history never records; the UI message stream writes them as
 * reasoning parts.
 */
import Anthropic from '@anthropic-ai/sdk';
import { readUIMessageStream, type UIMessage } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Agent, type Policy, type RunEvent } from '../../src/index.js';
import { aiSdkPolicy, toUIMessageStream } from '../../src/models/ai-sdk.js';
import { anthropicPolicy } from '../../src/models/anthropic.js';
import { openaiPolicy } from '../../src/models/openai.js';
import { type FakeServer, fakeServer, fixture } from './fake-server.js';

/** The reasoning deltas and the history of a run of `policy` that answers at once. */
async function run(policy: Policy) {
  const agent = new Agent({ tools: [], policy });
  const events: RunEvent[] = [];
  agent.observe((event) => events.push(event));
  expect(await agent.start('Is A-1 eligible?')).toBe('done');
  const reasoning = events.flatMap((e) => (e.type === 'delta' && e.delta.kind === 'reasoning' ? [e.delta.text] : []));
  return { reasoning, agent };
}

/** An SSE stream with `events` inserted after its first event. */
function withEvents(path: string, events: object[]) {
  const { sse = '' } = fixture(path) as { sse?: string };
  const [first, ...rest] = sse.split('\n\n');
  const extra = events.map((e) => `event: ${(e as { type: string }).type}\ndata: ${JSON.stringify(e)}`);
  return { sse: [first, ...extra, ...rest].join('\n\n') };
}

const usage = {
  inputTokens: { total: 40, noCache: 40, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 6, text: 6, reasoning: 0 },
};
function reasoningModel() {
  const parts = [
    { type: 'reasoning-start', id: 'r' },
    { type: 'reasoning-delta', id: 'r', delta: 'Delivered 3 days ago; ' },
    { type: 'reasoning-delta', id: 'r', delta: 'within 30 days.' },
    { type: 'reasoning-end', id: 'r' },
    { type: 'text-start', id: 't' },
    { type: 'text-delta', id: 't', delta: 'Yes, it is.' },
    { type: 'text-end', id: 't' },
    { type: 'finish', usage, finishReason: { unified: 'stop', raw: 'stop' } },
  ];
  return new MockLanguageModelV3({
    doStream: async () => ({
      stream: new ReadableStream({
        start(controller) {
          for (const part of parts) controller.enqueue(part as never);
          controller.close();
        },
      }),
    }),
  });
}

describe('reasoning deltas', () => {
  let server: FakeServer;
  beforeEach(async () => {
    server = await fakeServer();
  });
  afterEach(() => server.close());

  it('the AI SDK adapter passes the reasoning parts', async () => {
    const { reasoning, agent } = await run(aiSdkPolicy({ model: reasoningModel(), tools: [] }));
    expect(reasoning).toEqual(['Delivered 3 days ago; ', 'within 30 days.']);
    expect(agent.state.history.at(-1)).toEqual({ role: 'assistant', final: 'Yes, it is.' });
  });

  it('the Anthropic adapter passes the thinking, and keeps it out of the answer', async () => {
    server.reply(
      withEvents('anthropic/stream-final.sse', [
        { type: 'content_block_start', index: 7, content_block: { type: 'thinking', thinking: '', signature: '' } },
        { type: 'content_block_delta', index: 7, delta: { type: 'thinking_delta', thinking: 'Both look fine.' } },
        { type: 'content_block_delta', index: 7, delta: { type: 'signature_delta', signature: 'sig' } },
        { type: 'content_block_stop', index: 7 },
      ]),
    );
    const client = new Anthropic({ apiKey: 'test-key', baseURL: server.url });
    const { reasoning, agent } = await run(anthropicPolicy({ client, model: 'm', tools: [] }));
    expect(reasoning).toEqual(['Both look fine.']);
    expect(agent.state.answer).toBe('Both orders are fine.');
  });

  it('the Responses API adapter passes the reasoning summary', async () => {
    server.reply(
      withEvents('openai-responses/stream-final.sse', [
        {
          type: 'response.reasoning_summary_text.delta',
          sequence_number: 1,
          item_id: 'rs_1',
          output_index: 0,
          summary_index: 0,
          delta: 'Checking both.',
        },
        {
          type: 'response.reasoning_text.delta',
          sequence_number: 1,
          item_id: 'rs_1',
          output_index: 0,
          content_index: 0,
          delta: 'Fine.',
        },
      ]),
    );
    const client = new OpenAI({ apiKey: 'test-key', baseURL: `${server.url}/v1` });
    const { reasoning, agent } = await run(openaiPolicy({ client, model: 'm', api: 'responses', tools: [] }));
    expect(reasoning).toEqual(['Checking both.', 'Fine.']);
    expect(agent.state.answer).toBe('Both orders are fine.');
  });

  it('the UI message stream writes the reasoning as a reasoning part before the text', async () => {
    const agent = new Agent({ runId: 'r', tools: [], policy: aiSdkPolicy({ model: reasoningModel(), tools: [] }) });
    let message: UIMessage | undefined;
    for await (const m of readUIMessageStream({
      stream: toUIMessageStream(agent, () => agent.start('Is A-1 eligible?')),
    })) {
      message = m;
    }
    expect(message?.parts.filter((p) => p.type === 'reasoning' || p.type === 'text')).toMatchObject([
      { type: 'reasoning', text: 'Delivered 3 days ago; within 30 days.' },
      { type: 'text', text: 'Yes, it is.' },
    ]);
  });
});
