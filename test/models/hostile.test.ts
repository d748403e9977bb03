/**
 * The model's output is hostile (a prompt injection can write it, a compatible server or a proxy
 * can mangle it): whatever comes back, through the real SDK clients, the run records an
 * observation and goes on. Never a crash, never a call run with arguments it did not give.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { VERSION } from 'openai/version';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Agent, type Policy } from '../../src/index.js';
import { anthropicPolicy } from '../../src/models/anthropic.js';
import { openaiPolicy } from '../../src/models/openai.js';
import { type FakeServer, fakeServer, fixture, type Reply } from './fake-server.js';
import { tools } from './support.js';

let server: FakeServer;
beforeEach(async () => {
  server = await fakeServer();
});
afterEach(() => server.close());

/** A JSON fixture with its body changed. */
function changed(path: string, change: (body: any) => void): Reply {
  const reply = fixture(path) as { status: number; body: any };
  change(reply.body);
  return reply;
}

/** Runs one odd reply, then the fixture's final answer: the odd step must be an observation. */
async function oddStep(policy: Policy<typeof tools>, odd: Reply, final: Reply) {
  server.reply(odd, final);
  const agent = new Agent({ tools, policy, policyRetries: 0 });
  const status = await agent.start('go');
  return { status, step: agent.state.history[1], agent };
}

const chat = (stream = false) =>
  openaiPolicy({ client: new OpenAI({ apiKey: 'k', baseURL: `${server.url}/v1` }), model: 'm', tools, stream });
const responses = (stream = false) =>
  openaiPolicy({
    client: new OpenAI({ apiKey: 'k', baseURL: `${server.url}/v1` }),
    model: 'm',
    api: 'responses',
    tools,
    stream,
  });
const claude = (stream = false) =>
  anthropicPolicy({ client: new Anthropic({ apiKey: 'k', baseURL: server.url }), model: 'm', tools, stream });

const call = (id: string, name: unknown, args: unknown) => ({
  id,
  type: 'function',
  function: { name, arguments: args },
});

describe('odd chat completions', () => {
  const cases: [string, (body: any) => void, RegExp][] = [
    ['no choices', (b) => (b.choices = []), /has neither tool nor final/],
    ['tool_calls not an array', (b) => (b.choices[0].message.tool_calls = { 0: 1 }), /has neither tool nor final/],
    ['a tool call that is null', (b) => (b.choices[0].message.tool_calls = [null]), /has neither tool nor final/],
    [
      'arguments a JSON array',
      (b) => (b.choices[0].message.tool_calls = [call('c1', 'refund', '[1,2]')]),
      /args must be an object/,
    ],
    [
      'arguments JSON null',
      (b) => (b.choices[0].message.tool_calls = [call('c1', 'refund', 'null')]),
      /args must be an object/,
    ],
    [
      'an empty tool name',
      (b) => (b.choices[0].message.tool_calls = [call('c1', '', '{}')]),
      /tool must be a non-empty string/,
    ],
    [
      'two calls with one id',
      (b) =>
        (b.choices[0].message.tool_calls = [
          call('same', 'lookup_order', '{"order":"A-1"}'),
          call('same', 'lookup_order', '{"order":"A-2"}'),
        ]),
      /calls\[1\]\.id repeats the id of an earlier call/,
    ],
    [
      'more calls than a step takes',
      (b) =>
        (b.choices[0].message.tool_calls = Array.from({ length: 65 }, (_, i) =>
          call(`c${i}`, 'lookup_order', '{"order":"A-1"}'),
        )),
      /more than 64 calls/,
    ],
  ];
  for (const [name, change, error] of cases) {
    it(`${name}: a malformed action, then the run goes on`, async () => {
      const { status, step, agent } = await oddStep(
        chat(),
        changed('openai-chat/parallel-calls.json', change),
        fixture('openai-chat/final.json'),
      );
      expect(status).toBe('done');
      expect(step).toMatchObject({ role: 'tool', error: expect.stringMatching(error) });
      expect(agent.state.usage.inputTokens).toBeGreaterThan(0);
    });
  }

  it('a streamed chunk of an odd shape: the whole response is malformed, nothing half-read runs', async () => {
    const { sse } = fixture('openai-chat/stream-text-and-calls.sse') as { sse: string };
    const odd = sse.replace('"tool_calls":[{"index":0,"function":{"arguments":"{\\"ord"}}]', '"tool_calls":[null]');
    expect(odd).not.toBe(sse);
    const { status, step } = await oddStep(chat(true), { sse: odd }, fixture('openai-chat/stream-final.sse'));
    expect(status).toBe('done');
    expect(step).toMatchObject({ role: 'tool', error: 'malformed action: has neither tool nor final' });
  });

  it('a streamed chunk whose choice is null: it says nothing, or the SDK throws on it (openai 7.60)', async () => {
    const { sse } = fixture('openai-chat/stream-text-and-calls.sse') as { sse: string };
    const odd = sse.replace(
      '"choices":[{"index":0,"delta":{"content":"Checking"},"logprobs":null,"finish_reason":null}]',
      '"choices":[null]',
    );
    expect(odd).not.toBe(sse);
    const { status, step, agent } = await oddStep(chat(true), { sse: odd }, fixture('openai-chat/stream-final.sse'));
    if (status === 'failed') {
      // openai 7.60 reads each chunk's choices itself (7.0 does not): its error, thrown, for the
      // runtime to retry. Nothing of the response was recorded.
      expect(Number(VERSION.split('.')[0])).toBeGreaterThanOrEqual(7);
      expect(agent.state.error).toMatch(/^TypeError: /);
      expect(agent.state.history).toEqual([{ role: 'user', content: 'go' }]);
    } else {
      // openai 6 passes the chunk on; the adapter reads no delta in it.
      expect(status).toBe('done');
      expect(step).toMatchObject({ role: 'assistant', text: ' both orders.' });
      expect(step && 'calls' in step && step.calls.map((c) => c.args)).toEqual([
        { order: 'A-1001' },
        { order: 'A-1002' },
      ]);
    }
  });
});

describe('odd responses', () => {
  it('arguments that are a number, beside an item of an unknown type: a malformed action', async () => {
    const odd = changed('openai-responses/parallel-calls.json', (b) => {
      b.output.push({ type: 'mystery', id: 'x' });
      b.output[1].arguments = 42;
    });
    const { status, step } = await oddStep(responses(), odd, fixture('openai-responses/final.json'));
    expect(status).toBe('done');
    expect(step).toMatchObject({ role: 'tool', error: 'malformed action: calls[1].args must be an object' });
  });

  it('a failed response is the API error: thrown, retried, then the run fails', async () => {
    const failed = changed('openai-responses/final.json', (b) => {
      b.status = 'failed';
      b.error = { code: 'server_error', message: 'The model failed to respond' };
    });
    server.reply(failed);
    const agent = new Agent({ tools, policy: responses(), policyRetries: 0 });
    expect(await agent.start('go')).toBe('failed');
    expect(agent.state.error).toBe('Error: response failed: The model failed to respond');
  });
});

describe('odd messages (Anthropic)', () => {
  it('a content block that is null: a malformed action', async () => {
    const odd = changed('anthropic/parallel-calls.json', (b) => b.content.push(null));
    const { status, step } = await oddStep(claude(), odd, fixture('anthropic/final.json'));
    expect(status).toBe('done');
    expect(step).toMatchObject({ role: 'tool', error: 'malformed action: has neither tool nor final' });
  });

  it('tool input that is not an object: a malformed action', async () => {
    const odd = changed('anthropic/text-and-call.json', (b) => (b.content[1].input = 'refund everything'));
    const { status, step } = await oddStep(claude(), odd, fixture('anthropic/final.json'));
    expect(status).toBe('done');
    expect(step).toMatchObject({ role: 'tool', error: 'malformed action: args must be an object' });
  });

  it('a streamed block start without its block: the whole response is malformed', async () => {
    const { sse } = fixture('anthropic/stream-text-and-calls.sse') as { sse: string };
    const odd = sse.replace(/"content_block":\{"type":"tool_use"[^}]*\}\}/, '"content_block":null');
    expect(odd).not.toBe(sse);
    const { status, step } = await oddStep(claude(true), { sse: odd }, fixture('anthropic/stream-final.sse'));
    expect(status).toBe('done');
    expect(step).toMatchObject({ role: 'tool', error: 'malformed action: has neither tool nor final' });
  });
});
