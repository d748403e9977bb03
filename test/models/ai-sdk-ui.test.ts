/**
 * A run as the AI SDK's UI message stream, read by the `ai` package's own chat client over HTTP:
 * an AI SDK model (streamed), AI SDK tools, a pure call's output, a side effect's approval request
 * as the chat's approval part, the browser's answer (`addToolApprovalResponse`) back to `decide`,
 * and the run going on in the same assistant message.
 */
import {
  AbstractChat,
  type ChatState,
  type ChatStatus,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  readUIMessageStream,
  type UIMessage,
} from 'ai';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Agent, OptionsError, RunStateError } from '../../src/index.js';
import { chatTurn, decisionsFrom, toUIMessageStream } from '../../src/models/ai-sdk.js';
import { chatServer, type Part, supportDesk } from './chat-support.js';

/** The chat's state in memory, as `ai`'s framework bindings keep it in theirs. */
class MemoryState implements ChatState<UIMessage> {
  status: ChatStatus = 'ready';
  error: Error | undefined = undefined;
  messages: UIMessage[] = [];
  pushMessage = (message: UIMessage) => {
    this.messages = this.messages.concat(message);
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index: number, message: UIMessage) => {
    this.messages = this.messages.map((m, i) => (i === index ? message : m));
  };
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

class NodeChat extends AbstractChat<UIMessage> {
  constructor(api: string) {
    super({
      transport: new DefaultChatTransport({ api }),
      state: new MemoryState(),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    });
  }
}

const servers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function chatRoute(make: (id: string) => Agent) {
  const server = await chatServer(make);
  servers.push(server);
  return { url: `${server.url}/api/chat`, runs: server.runs };
}

const toolParts = (message: UIMessage | undefined) =>
  (message?.parts ?? []).filter((p) => p.type.startsWith('tool-')) as unknown as Part[];

describe("toUIMessageStream, read by ai's chat client over HTTP", () => {
  it('streams text and tool calls, asks for approval as the chat’s approval part, and goes on in the same message once approved', async () => {
    const desk = supportDesk();
    const { url, runs } = await chatRoute(() => new Agent({ runId: 'chat-1', tools: desk.tools, policy: desk.policy }));
    const chat = new NodeChat(url);
    await chat.sendMessage({ text: 'Refund A-1, it arrived broken' });
    await vi.waitFor(() => expect(chat.status).toBe('ready'));
    const agent = runs.values().next().value as Agent;
    expect(agent.state.status).toBe('awaiting_approval');
    const pending = agent.state.pendingCalls[0];
    const answer = chat.lastMessage;
    expect(answer?.role).toBe('assistant');
    expect(answer?.parts.find((p) => p.type === 'text')).toMatchObject({ text: 'Let me look.' });
    expect(toolParts(answer)).toMatchObject([
      {
        type: 'tool-lookup_order',
        toolCallId: 'chat-1:1',
        state: 'output-available',
        input: { order: 'A-1' },
        output: { order: 'A-1', total: 129 },
      },
      {
        type: 'tool-refund',
        toolCallId: 'chat-1:2',
        state: 'approval-requested',
        input: { order: 'A-1', amount: 60 },
        approval: { id: pending?.id },
      },
    ]);
    expect(desk.refunds).toEqual([]);

    // The human approves in the browser; the chat sends the messages back by itself.
    await chat.addToolApprovalResponse({ id: pending?.id ?? '', approved: true, reason: 'broken on arrival' });
    await vi.waitFor(() => expect(agent.state.status).toBe('done'));
    await vi.waitFor(() => expect(chat.status).toBe('ready'));
    expect(desk.refunds).toEqual([{ order: 'A-1', amount: 60, key: 'chat-1:2' }]);
    expect(chat.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(toolParts(chat.lastMessage)).toMatchObject([
      { type: 'tool-lookup_order', state: 'output-available' },
      { type: 'tool-refund', state: 'output-available', output: { refunded: 60 } },
    ]);
    const texts = chat.lastMessage?.parts.filter((p) => p.type === 'text').map((p) => ('text' in p ? p.text : ''));
    expect(texts).toEqual(['Let me look.', 'Refunded $60.']);
    expect(agent.state.history.find((e) => e.role === 'tool' && e.tool === 'refund')).toMatchObject({
      approval: { approved: true, note: 'broken on arrival' },
    });
  });

  it('a denial in the browser is the call’s denied part, and nothing runs', async () => {
    const desk = supportDesk();
    const { url, runs } = await chatRoute(() => new Agent({ runId: 'chat-2', tools: desk.tools, policy: desk.policy }));
    const chat = new NodeChat(url);
    await chat.sendMessage({ text: 'Refund A-1' });
    await vi.waitFor(() => expect(chat.status).toBe('ready'));
    const agent = runs.values().next().value as Agent;
    const id = agent.state.pendingCalls[0]?.id ?? '';
    await chat.addToolApprovalResponse({ id, approved: false, reason: 'not eligible' });
    await vi.waitFor(() => expect(agent.state.status).toBe('done'));
    await vi.waitFor(() => expect(chat.status).toBe('ready'));
    expect(desk.refunds).toEqual([]);
    expect(toolParts(chat.lastMessage)[1]).toMatchObject({ type: 'tool-refund', state: 'output-denied' });
  });
});

/** Every chunk of a stream. */
async function chunksOf(stream: ReadableStream<{ type: string }>) {
  const chunks: { type: string }[] = [];
  const reader = stream.getReader();
  for (let read = await reader.read(); !read.done; read = await reader.read()) chunks.push(read.value);
  return chunks;
}

describe('chatTurn: one request of the chat', () => {
  it('goes on with a new message after the answer: a new assistant message, the same run', async () => {
    const desk = supportDesk();
    const { url, runs } = await chatRoute(() => new Agent({ runId: 'chat-3', tools: desk.tools, policy: desk.policy }));
    const chat = new NodeChat(url);
    await chat.sendMessage({ text: 'Refund A-1' });
    await vi.waitFor(() => expect(chat.status).toBe('ready'));
    const agent = runs.get(chat.id) as Agent;
    await chat.addToolApprovalResponse({ id: agent.state.pendingCalls[0]?.id ?? '', approved: true });
    await vi.waitFor(() => expect(agent.state.status).toBe('done'));
    await vi.waitFor(() => expect(chat.status).toBe('ready'));
    await chat.sendMessage({ text: 'Anything else?' });
    await vi.waitFor(() =>
      expect(chat.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']),
    );
    await vi.waitFor(() => expect(chat.status).toBe('ready'));
    expect(chat.lastMessage?.parts.filter((p) => p.type === 'text')).toMatchObject([{ text: 'nothing more' }]);
    expect(agent.state.history.filter((e) => e.role === 'user').map((e) => e.content)).toEqual([
      'Refund A-1',
      'Anything else?',
    ]);
  });

  it('refuses a request that does not fit the body or the run, changing nothing', async () => {
    const desk = supportDesk();
    const agent = new Agent({ runId: 'c', tools: desk.tools, policy: desk.policy });
    const runs = new Map<string, Agent>();
    const options = {
      load: (id: string) => runs.get(id) ?? null,
      create: (id: string) => runs.set(id, agent).get(id) as Agent,
    };
    const user = (text: string) => ({ role: 'user', parts: [{ type: 'text', text }] });
    for (const body of [
      null,
      'x',
      { id: 'c' },
      { id: '', messages: [] },
      { id: 'x'.repeat(201), messages: [] },
      { id: 7, messages: [] },
    ]) {
      await expect(chatTurn(body, options)).rejects.toBeInstanceOf(OptionsError);
    }
    // A new chat needs the user's text.
    await expect(chatTurn({ id: 'c', messages: [user('  ')] }, options)).rejects.toThrow(
      /starts with a message of the user/,
    );
    expect(runs.size).toBe(0);
    const first = await chatTurn({ id: 'c', messages: [user('Refund A-1')] }, options);
    await chunksOf(first);
    expect(agent.state.status).toBe('awaiting_approval');
    const steps = agent.state.steps;
    // A new message while a call waits for a human; answers for a run with nothing waiting.
    await expect(chatTurn({ id: 'c', messages: [user('hurry up')] }, options)).rejects.toBeInstanceOf(RunStateError);
    const answered = {
      role: 'assistant',
      parts: [{ type: 'tool-refund', state: 'approval-responded', approval: { id: 'nope', approved: true } }],
    };
    const stale = await chatTurn({ id: 'c', messages: [user('Refund A-1'), answered] }, options);
    expect((await chunksOf(stale)).map((c) => c.type)).toContain('error');
    expect(agent.state.status).toBe('awaiting_approval');
    expect(agent.state.steps).toBe(steps);
    expect(desk.refunds).toEqual([]);
  });
});

describe('toUIMessageStream, chunk by chunk', () => {
  it('ends a failed drive with an error chunk and a finish; only a UserError’s message reaches the browser', async () => {
    const desk = supportDesk();
    const agent = new Agent({ tools: desk.tools, policy: desk.policy });
    const failing = (error: Error) => async () => {
      throw error;
    };
    expect(await chunksOf(toUIMessageStream(agent, failing(new Error('ENOENT /srv/secrets/db'))))).toEqual([
      { type: 'start' },
      { type: 'error', errorText: 'An error occurred.' },
      { type: 'finish', finishReason: 'error' },
    ]);
    const stale = new RunStateError('decide: the run is done', ['awaiting_approval']);
    expect(await chunksOf(toUIMessageStream(agent, failing(stale)))).toContainEqual({
      type: 'error',
      errorText: 'decide: the run is done',
    });
    const told = toUIMessageStream(agent, failing(new Error('x')), {
      onError: (e) => `failed: ${(e as Error).message}`,
    });
    expect(await chunksOf(told)).toContainEqual({ type: 'error', errorText: 'failed: x' });
    const throwing = toUIMessageStream(agent, failing(new Error('x')), {
      onError: () => {
        throw new Error('bad handler');
      },
    });
    expect(await chunksOf(throwing)).toContainEqual({ type: 'error', errorText: 'An error occurred.' });
  });

  it('stops when its reader goes away; the run goes on, unobserved', async () => {
    const desk = supportDesk();
    const agent = new Agent({ runId: 'gone', tools: desk.tools, policy: desk.policy });
    let started!: Promise<unknown>;
    const stream = toUIMessageStream(agent, () => {
      const status = agent.start('Refund A-1');
      started = status;
      return status;
    });
    const reader = stream.getReader();
    expect(await reader.read()).toEqual({ done: false, value: { type: 'start' } });
    await reader.cancel();
    expect(await started).toBe('awaiting_approval');
    // The stream no longer listens: a later event reaches no closed controller.
    expect(await agent.decide(true)).toBe('done');
    expect(desk.refunds).toHaveLength(1);
  });

  it('writes only text a policy streams: anything else it passes as a delta is left out', async () => {
    const agent = new Agent({
      runId: 'h',
      tools: [],
      policy: (_history, ctx) => {
        ctx.stream({ kind: 'text', text: 5 } as never);
        ctx.stream({ kind: 'reasoning', text: { html: '<b>' } } as never);
        ctx.stream({ kind: 'other', text: 'x' } as never);
        ctx.stream({ kind: 'reasoning', text: 'fine' });
        ctx.stream({ kind: 'text', text: 'ok' });
        return { final: 'ok' };
      },
    });
    const chunks = (await chunksOf(toUIMessageStream(agent, () => agent.start('go')))) as {
      type: string;
      delta?: unknown;
    }[];
    expect(chunks.filter((c) => c.type.endsWith('-delta')).map((c) => [c.type, c.delta])).toEqual([
      ['reasoning-delta', 'fine'],
      ['text-delta', 'ok'],
    ]);
  });

  it('is read into one assistant message by readUIMessageStream', async () => {
    const desk = supportDesk();
    const agent = new Agent({ runId: 'r', tools: desk.tools, policy: desk.policy });
    let message: UIMessage | undefined;
    for await (const m of readUIMessageStream({
      stream: toUIMessageStream(agent, () => agent.start('refund A-1'), { messageId: 'm1' }),
    })) {
      message = m;
    }
    expect(message?.id).toBe('m1');
    expect(toolParts(message).map((p) => [p.type, p.state])).toEqual([
      ['tool-lookup_order', 'output-available'],
      ['tool-refund', 'approval-requested'],
    ]);
  });
});

describe('decisionsFrom: the browser’s answers are hostile input', () => {
  const answered = (...parts: unknown[]) => [
    { role: 'user', parts: [] },
    { role: 'assistant', parts },
  ];
  const part = (approval: unknown) => ({ type: 'tool-refund', state: 'approval-responded', approval });

  it('reads each answered approval of the last assistant message; only approved: true approves', () => {
    expect(
      decisionsFrom(
        answered(
          part({ id: 'a', approved: true, reason: 'ok' }),
          part({ id: 'b', approved: 'true' }),
          part({ id: 'c', approved: false }),
          { type: 'tool-x', state: 'approval-requested', approval: { id: 'd' } },
        ),
      ),
    ).toEqual({ a: { approve: true, note: 'ok' }, b: { approve: false }, c: { approve: false } });
  });

  it('passes over anything of another shape, keeps the first answer for an id, and an id like __proto__ is only a key', () => {
    for (const messages of [
      null,
      'x',
      {},
      [{ role: 'assistant', parts: 'x' }],
      answered(null, 1, part(null), part({ id: 7 }), part({ id: '' })),
    ]) {
      expect(decisionsFrom(messages)).toEqual({});
    }
    const decisions = decisionsFrom(
      answered(part({ id: '__proto__', approved: true }), part({ id: '__proto__', approved: false })),
    );
    expect(Object.keys(decisions)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(decisions)).toBe(Object.prototype);
    expect(decisionsFrom(answered(part({ id: 'a', approved: false, reason: 'x'.repeat(5000) }))).a).toEqual({
      approve: false,
      note: 'x'.repeat(2000),
    });
  });
});
