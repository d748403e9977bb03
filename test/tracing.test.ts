/**
 * OpenTelemetry spans (issue 14, Observability), read back from the SDK's in-memory exporter: one
 * span per drive of a run, per policy call and per tool call, their parents and attributes, and
 * tracing that never changes a run (a throwing tracer, hostile error text).
 */
import { createOpenAI } from '@ai-sdk/openai';
import Anthropic from '@anthropic-ai/sdk';
import type { Tracer } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { defineAgent } from '../src/define.js';
import { Agent } from '../src/index.js';
import { aiSdkPolicy } from '../src/models/ai-sdk.js';
import { anthropicPolicy } from '../src/models/anthropic.js';
import { openaiPolicy } from '../src/models/openai.js';
import { markModel, modelOf } from '../src/policy-model.js';
import { MemoryStore } from '../src/stores/memory.js';
import { ManualClock } from '../src/testing/index.js';
import type { TracerLike } from '../src/tracer.js';
import { submitRun, Worker } from '../src/worker/index.js';
import { gate, recorder, sequence, until } from './support/helpers.js';
import { midCall } from './support/mid-call.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer: Tracer = provider.getTracer('tollgate-test');

afterEach(() => exporter.reset());

const spans = () => exporter.getFinishedSpans();
const named = (prefix: string) => spans().filter((s) => s.name.startsWith(prefix));
const only = (prefix: string): ReadableSpan => {
  const found = named(prefix);
  expect(found.map((s) => s.name)).toHaveLength(1);
  return found[0] as ReadableSpan;
};
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const idOf = (span: ReadableSpan) => span.spanContext().spanId;
const ERROR = 2;

const usage = { inputTokens: 10, outputTokens: 3 };

describe('spans of a run', () => {
  it('a run span per drive, with the policy and tool calls as its children and the GenAI attributes', async () => {
    const look = recorder('look');
    const agent = new Agent({
      runId: 'r1',
      agent: 'support',
      tools: [look.tool],
      policy: sequence({ tool: 'look', args: { q: 1 }, id: 'call_a', usage }, { final: 'ok', usage }),
      maxTokens: 100,
      tracer,
    });
    expect(await agent.start('go')).toBe('done');

    const run = only('invoke_agent');
    expect(run.name).toBe('invoke_agent support');
    expect(run.kind).toBe(0);
    expect(parentOf(run)).toBeUndefined();
    expect(run.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'support',
      'gen_ai.conversation.id': 'r1',
      'tollgate.run.id': 'r1',
      'tollgate.run.trigger': 'start',
      'tollgate.run.status': 'done',
      'tollgate.step': 2,
      'gen_ai.usage.input_tokens': 20,
      'gen_ai.usage.output_tokens': 6,
      'tollgate.budget.steps_left': 6,
      'tollgate.budget.tokens_left': 74,
    });
    expect(run.attributes).not.toHaveProperty('tollgate.budget.active_ms_left'); // unlimited
    expect(run.status.code).not.toBe(ERROR);

    const chats = named('chat');
    expect(chats.map((s) => s.name)).toEqual(['chat', 'chat']);
    expect(chats.map((s) => s.attributes['tollgate.step'])).toEqual([1, 2]);
    expect(chats.map((s) => s.attributes['tollgate.action'])).toEqual(['calls', 'final']);
    expect(chats[0]?.kind).toBe(2);
    expect(chats[0]?.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'tollgate.run.id': 'r1',
      'gen_ai.usage.input_tokens': 10,
      'gen_ai.usage.output_tokens': 3,
      'tollgate.policy.attempts': 1,
      'tollgate.budget.steps_left': 8,
      'tollgate.budget.tokens_left': 100,
    });
    expect(chats[1]?.attributes['tollgate.budget.tokens_left']).toBe(87);

    const tool = only('execute_tool');
    expect(tool.name).toBe('execute_tool look');
    expect(tool.attributes).toEqual({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'look',
      'gen_ai.tool.call.id': 'call_a',
      'gen_ai.tool.type': 'function',
      'tollgate.run.id': 'r1',
      'tollgate.step': 1,
      'tollgate.call.key': 'r1:1',
      'tollgate.call.id': expect.stringMatching(/^r1:1#1@/),
      'tollgate.tool.side_effect': false,
      'tollgate.approval.decision': 'not_required',
      'tollgate.call.recovered': false,
      'tollgate.call.outcome': 'result',
    });

    for (const child of [...chats, tool]) {
      expect(parentOf(child)).toBe(idOf(run));
      expect(child.spanContext().traceId).toBe(run.spanContext().traceId);
    }
  });

  it('a denied approval: an event on the deciding drive, and no tool span (nothing ran)', async () => {
    const send = recorder('send', { sideEffect: true });
    const agent = new Agent({
      runId: 'r2',
      tools: [send.tool],
      policy: sequence({ tool: 'send', args: { to: 'x' } }, { final: 'gave up' }),
      tracer,
    });
    expect(await agent.start('mail')).toBe('awaiting_approval');
    const first = only('invoke_agent');
    expect(first.attributes).toMatchObject({
      'tollgate.run.status': 'awaiting_approval',
      'tollgate.approval.pending': 1,
    });
    const callId = agent.state.pending?.id;
    exporter.reset();

    expect(await agent.decide(false, 'not today')).toBe('done');
    expect(send.calls).toEqual([]);
    expect(named('execute_tool')).toEqual([]);
    const run = only('invoke_agent');
    expect(run.attributes).toMatchObject({ 'tollgate.run.trigger': 'decide', 'tollgate.run.status': 'done' });
    expect(run.events.map((e) => [e.name, e.attributes])).toEqual([
      [
        'tollgate.approval',
        {
          'tollgate.approval.decision': 'denied',
          'tollgate.approval.always': false,
          'tollgate.call.id': callId,
          'tollgate.call.key': 'r2:1',
          'gen_ai.tool.name': 'send',
        },
      ],
    ]);
    expect(parentOf(only('chat'))).toBe(idOf(run));
  });

  it('an expired approval and a cancellation: events on the drives that applied them', async () => {
    let now = 0;
    const clock = { now: () => now, sleep: async () => {} };
    const send = recorder('send', { sideEffect: true });
    const policy = sequence({ tool: 'send', args: {} }, { tool: 'send', args: { again: true } });
    const agent = new Agent({ runId: 'e', tools: [send.tool], policy, approvalTtlMs: 1_000, clock, tracer });
    await agent.start('mail');
    exporter.reset();
    now = 5_000;
    expect(await agent.run()).toBe('awaiting_approval');
    const expired = only('invoke_agent');
    expect(expired.attributes['tollgate.run.trigger']).toBe('expire');
    expect(expired.events.map((e) => [e.name, e.attributes?.['tollgate.approval.decision']])).toEqual([
      ['tollgate.approval', 'expired'],
    ]);
    exporter.reset();
    expect(await agent.cancel('changed my mind')).toBe('cancelled');
    const cancelled = only('invoke_agent');
    expect(cancelled.attributes).toMatchObject({
      'tollgate.run.trigger': 'cancel',
      'tollgate.run.status': 'cancelled',
    });
    expect(cancelled.events.map((e) => [e.name, e.attributes])).toEqual([
      ['tollgate.cancel', { 'tollgate.cancel.reason': 'changed my mind' }],
    ]);
    expect(cancelled.status.code).not.toBe(ERROR);
    expect(send.calls).toEqual([]);
  });

  it('an approved call: its tool span says so', async () => {
    const send = recorder('send', { sideEffect: true });
    const agent = new Agent({
      tools: [send.tool],
      policy: sequence({ tool: 'send', args: {} }, { final: 'sent' }),
      tracer,
    });
    await agent.start('mail');
    expect(await agent.decide(true, 'fine')).toBe('done');
    const tool = only('execute_tool');
    expect(tool.attributes).toMatchObject({
      'tollgate.approval.decision': 'approved',
      'tollgate.tool.side_effect': true,
      'tollgate.call.outcome': 'result',
    });
    const decided = named('invoke_agent').find((s) => s.attributes['tollgate.run.trigger'] === 'decide');
    expect(decided?.events[0]?.attributes?.['tollgate.approval.decision']).toBe('approved');
    expect(parentOf(tool)).toBe(decided && idOf(decided));
  });

  it('a budget stop: the run span says which budget, and is no error', async () => {
    const look = recorder('look');
    const agent = new Agent({ tools: [look.tool], policy: sequence({ tool: 'look', args: {} }), maxSteps: 2, tracer });
    expect(await agent.start('loop')).toBe('budget_exhausted');
    const run = only('invoke_agent');
    expect(run.attributes).toMatchObject({
      'tollgate.run.status': 'budget_exhausted',
      'tollgate.budget.stopped_by': 'steps',
      'tollgate.budget.steps_left': 0,
      'tollgate.step': 2,
    });
    expect(run.status.code).not.toBe(ERROR);
    expect(named('chat')).toHaveLength(2);
    expect(named('execute_tool')).toHaveLength(2);
  });

  it('a tool error: status ERROR and an exception event, its text bounded and well-formed', async () => {
    const hostile = `\uD800${'x'.repeat(50_000)}`;
    const boom = recorder('boom', {}, () => {
      throw new RangeError(hostile);
    });
    const agent = new Agent({ tools: [boom.tool], policy: sequence({ tool: 'boom', args: {} }, { final: 1 }), tracer });
    expect(await agent.start('go')).toBe('done');
    const tool = only('execute_tool');
    expect(tool.status.code).toBe(ERROR);
    expect(tool.attributes).toMatchObject({ 'tollgate.call.outcome': 'error', 'error.type': 'RangeError' });
    const message = tool.status.message ?? '';
    expect(message.startsWith('RangeError: \uFFFDxxx')).toBe(true);
    expect(message.length).toBeLessThan(1_100);
    const exception = tool.events.find((e) => e.name === 'exception');
    expect(exception?.attributes).toMatchObject({ 'exception.type': 'RangeError', 'exception.message': message });
    expect(only('invoke_agent').status.code).not.toBe(ERROR); // the run goes on: the model reads the error
  });

  it('a policy that keeps failing: a retry event per failed try, ERROR on the call and on the run', async () => {
    const agent = new Agent({
      tools: [],
      policy: () => {
        throw new TypeError('model down');
      },
      policyRetries: 1,
      retryDelayMs: 0,
      tracer,
    });
    expect(await agent.start('go')).toBe('failed');
    const chat = only('chat');
    expect(chat.status).toEqual({ code: ERROR, message: 'TypeError: model down' });
    expect(chat.attributes['tollgate.policy.attempts']).toBe(2);
    expect(chat.events.map((e) => e.name)).toEqual(['tollgate.policy.retry', 'exception']);
    expect(chat.events[0]?.attributes).toEqual({
      'tollgate.policy.attempt': 1,
      'exception.message': 'TypeError: model down',
    });
    const run = only('invoke_agent');
    expect(run.status).toEqual({ code: ERROR, message: 'TypeError: model down' });
    expect(run.attributes['tollgate.run.status']).toBe('failed');
  });

  it('a policy call cut by the end of the active-time budget says so in its status, at the very deadline', async () => {
    const clock = new ManualClock(0);
    let signal: AbortSignal | undefined;
    const agent = new Agent({
      clock,
      tools: [],
      maxActiveMs: 500,
      policy: (_h, ctx) => {
        signal = ctx.signal;
        return new Promise<never>(() => {});
      },
      tracer,
    });
    const done = agent.start('go');
    await until(() => signal !== undefined);
    clock.advance(500);
    expect(await done).toBe('budget_exhausted');
    expect(only('chat').status).toEqual({
      code: ERROR,
      message: 'TimeoutError: policy stopped: the active-time budget (maxActiveMs) ran out',
    });
  });

  it('a back-off that reaches the end of the active-time budget: no further try, and the status says why', async () => {
    const clock = new ManualClock(0);
    let calls = 0;
    const agent = new Agent({
      clock,
      tools: [],
      maxActiveMs: 500,
      policyRetries: 3,
      retryDelayMs: 1_000,
      policy: () => {
        calls++;
        throw new Error('overloaded');
      },
      tracer,
    });
    const done = agent.start('go');
    await until(() => clock.sleepers === 1);
    clock.advance(500);
    expect(await done).toBe('budget_exhausted');
    expect(calls).toBe(1);
    const chat = only('chat');
    expect(chat.status).toEqual({
      code: ERROR,
      message: 'TimeoutError: policy stopped: the active-time budget (maxActiveMs) ran out',
    });
    expect(chat.attributes['tollgate.policy.attempts']).toBe(2);
  });

  it('a call cancelled while its approval rule is asked again: the tool never runs, and its span ends in error', async () => {
    const held = gate<boolean>();
    let asked = 0;
    const look = recorder('look', {
      sideEffect: true,
      needsApproval: () => (++asked === 1 ? false : held.promise),
    });
    const agent = new Agent({ tools: [look.tool], policy: sequence({ tool: 'look', args: {} }), tracer });
    void agent.start('go').catch(() => {});
    await until(() => asked === 2);
    expect(await agent.cancel('stop')).toBe('cancelled');
    held.resolve(false);
    await until(() => named('execute_tool').length === 1);
    expect(only('execute_tool').status.code).toBe(ERROR);
    expect(look.calls).toEqual([]);
  });

  it('a drive that fails (a save refused): its span is in error, and the call after it never ran', async () => {
    const store = new MemoryStore();
    const save = store.save.bind(store);
    let saves = 0;
    store.save = (...args) => (++saves > 1 ? Promise.reject(new Error('disk full')) : save(...args));
    // A side effect: its call is saved before it is made (a pure call is saved with its result).
    const look = recorder('look', { sideEffect: true, needsApproval: false });
    const agent = new Agent({ tools: [look.tool], policy: sequence({ tool: 'look', args: {} }), store, tracer });
    await expect(agent.start('go')).rejects.toThrow('disk full');
    const run = only('invoke_agent');
    expect(run.status.code).toBe(ERROR);
    expect(run.status.message).toContain('disk full');
    expect(look.calls).toEqual([]);
  });

  it('a run resumed mid-call: the resumed drive has the call again (idempotent) and the rest', async () => {
    const blob = await midCall({ sideEffect: true, idempotent: true });
    exporter.reset();
    const pay = recorder('pay', { sideEffect: true, idempotent: true });
    const again = Agent.resume(blob, { tools: [pay.tool], policy: sequence({ final: 'paid' }), tracer });
    expect(await again.run()).toBe('done');
    expect(pay.calls).toEqual([{ args: { amount: 7 }, key: 'r:1' }]);
    const run = only('invoke_agent');
    expect(run.attributes).toMatchObject({ 'tollgate.run.trigger': 'resume', 'tollgate.run.status': 'done' });
    const tool = only('execute_tool');
    expect(tool.attributes).toMatchObject({
      'tollgate.call.recovered': true,
      'tollgate.call.key': 'r:1',
      'tollgate.approval.decision': 'approved',
      'tollgate.call.outcome': 'result',
    });
    expect(only('chat').attributes['tollgate.step']).toBe(2);
    expect([parentOf(tool), parentOf(only('chat'))]).toEqual([idOf(run), idOf(run)]);
  });

  it('a run resumed with a side effect of unknown outcome: a tool span that ran nothing', async () => {
    const blob = await midCall({ sideEffect: true });
    exporter.reset();
    const pay = recorder('pay', { sideEffect: true });
    const again = Agent.resume(blob, { tools: [pay.tool], policy: sequence({ final: 'paid' }), tracer });
    expect(await again.run()).toBe('awaiting_approval');
    expect(pay.calls).toEqual([]);
    expect(only('execute_tool').attributes).toMatchObject({
      'tollgate.call.recovered': true,
      'tollgate.call.outcome': 'outcome_unknown',
    });
    expect(only('invoke_agent').attributes['tollgate.run.status']).toBe('awaiting_approval');
  });

  it('names the model of an adapter-made policy', async () => {
    const agent = new Agent({
      tools: [],
      policy: markModel(() => ({ final: 1, usage }), { provider: 'openai', model: 'gpt-5-mini' }),
      tracer,
    });
    await agent.start('go');
    const chat = only('chat');
    expect(chat.name).toBe('chat gpt-5-mini');
    expect(chat.attributes).toMatchObject({ 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'gpt-5-mini' });
  });

  it('the adapters mark their policies with their model', () => {
    const openai = new OpenAI({ apiKey: 'k', baseURL: 'http://127.0.0.1:9' });
    const anthropic = new Anthropic({ apiKey: 'k', baseURL: 'http://127.0.0.1:9' });
    expect(modelOf(openaiPolicy({ client: openai, model: 'gpt-5-mini', tools: [] }))).toEqual({
      provider: 'openai',
      model: 'gpt-5-mini',
    });
    expect(modelOf(anthropicPolicy({ client: anthropic, model: 'claude-x', tools: [] }))).toEqual({
      provider: 'anthropic',
      model: 'claude-x',
    });
    const model = createOpenAI({ apiKey: 'k', baseURL: 'http://127.0.0.1:9' }).chat('gpt-y');
    expect(modelOf(aiSdkPolicy({ model, tools: [] }))).toEqual({ provider: 'openai', model: 'gpt-y' });
    expect(modelOf(() => 1)).toBeNull();
  });
});

describe('tracing never changes a run', () => {
  const scenario = async (options: { tracer?: TracerLike }) => {
    const send = recorder('send', { sideEffect: true });
    const boom = recorder('boom', {}, () => {
      throw new Error('no');
    });
    const agent = new Agent({
      runId: 'same',
      tools: [send.tool, boom.tool],
      policy: sequence({ tool: 'boom', args: {} }, { tool: 'send', args: {} }, { final: 'end', usage }),
      clock: { now: () => 0, sleep: async () => {} },
      ...options,
    });
    const statuses = [await agent.start('go'), await agent.decide(true, 'ok')];
    return { statuses, state: agent.state, checkpoint: agent.checkpoint(), sent: send.calls.length };
  };

  it('a tracer whose startSpan throws, or whose spans throw on every call, leaves the run as without one', async () => {
    const plain = await scenario({});
    expect(plain.statuses).toEqual(['awaiting_approval', 'done']);
    const throwing: TracerLike = {
      startSpan: () => {
        throw new Error('exporter down');
      },
    };
    const hostileSpan = new Proxy(
      {},
      {
        get: () => {
          throw new Error('no such method');
        },
      },
    );
    const spansThrow: TracerLike = { startSpan: () => hostileSpan as never };
    const notASpan: TracerLike = { startSpan: () => 42 as never };
    for (const bad of [throwing, spansThrow, notASpan]) expect(await scenario({ tracer: bad })).toEqual(plain);
    expect(await scenario({ tracer })).toEqual(plain);
    expect(named('execute_tool')).toHaveLength(2);
  });

  it('hostile values reach spans bounded and well-formed, and a policy that throws when read is still run', async () => {
    const look = recorder('look');
    const policy = markModel(sequence({ tool: 'look', args: {}, id: `\uD800${'i'.repeat(20_000)}` }, { final: 1 }), {
      provider: 'p',
      model: `m\uD800${'x'.repeat(20_000)}`,
    });
    const agent = new Agent({ tools: [look.tool], policy, tracer });
    expect(await agent.start('go')).toBe('done');
    const texts = spans().flatMap((span) => [span.name, ...Object.values(span.attributes).map(String)]);
    expect(Math.max(...texts.map((t) => t.length))).toBeLessThan(1_100);
    expect(texts.some((t) => /[\uD800-\uDBFF](?![\uDC00-\uDFFF])/.test(t))).toBe(false);
    const chat = named('chat')[0];
    expect(chat?.name.startsWith('chat m\uFFFDxxx')).toBe(true);
    // The id is refused (a malformed action, which the model reads): no tool ran.
    expect(chat?.attributes).toMatchObject({
      'tollgate.action': 'malformed',
      'tollgate.action.error': expect.stringContaining('id must be'),
    });
    expect(look.calls).toEqual([]);

    exporter.reset();
    const unreadable = new Proxy(() => ({ final: 2 }), {
      get: () => {
        throw new Error('no reading me');
      },
    });
    const other = new Agent({ tools: [], policy: unreadable, tracer });
    expect(await other.start('go')).toBe('done');
    expect(only('chat').name).toBe('chat');
  });

  it('the tracer option is checked like every other', () => {
    const support = defineAgent({ name: 'support', tools: [], policy: () => ({ final: 1 }) });
    expect(() => new Worker({ store: new MemoryStore(), agents: [support], tracer: 5 as never })).toThrow(
      "new Worker: tracer must be an OpenTelemetry Tracer (an object with startSpan, such as trace.getTracer('my-service')), got 5",
    );
    const base = { tools: [], policy: () => ({ final: 1 }) };
    expect(() => new Agent({ ...base, tracer: {} as never })).toThrow(
      "new Agent: tracer must be an OpenTelemetry Tracer (an object with startSpan, such as trace.getTracer('my-service')), got an object",
    );
    expect(() => new Agent({ ...base, tracr: tracer } as never)).toThrow(
      'new Agent: unknown option "tracr" (did you mean "tracer"?)',
    );
  });
});

describe('a worker traces the runs it works', () => {
  it('with its own tracer option, and the definition`s otherwise', async () => {
    const store = new MemoryStore();
    const support = defineAgent({ name: 'support', tools: [], policy: () => ({ final: 'hi' }) });
    const traced = defineAgent({ name: 'traced', tools: [], policy: () => ({ final: 'hi' }), tracer });
    await submitRun(store, { agent: support, goal: 'a', runId: 'w1' });
    await submitRun(store, { agent: traced, goal: 'b', runId: 'w2' });
    const worker = new Worker({ store, agents: [support, traced], tracer: tracer as TracerLike });
    expect(await worker.drain()).toBe(2);
    const runs = named('invoke_agent');
    expect(
      runs.map((s) => [s.name, s.attributes['tollgate.run.id'], s.attributes['tollgate.run.status']]).sort(),
    ).toEqual([
      ['invoke_agent support', 'w1', 'done'],
      ['invoke_agent traced', 'w2', 'done'],
    ]);

    exporter.reset();
    await submitRun(store, { agent: traced, goal: 'c', runId: 'w3' });
    expect(await new Worker({ store, agents: [traced] }).drain()).toBe(1);
    expect(only('invoke_agent').attributes['tollgate.run.id']).toBe('w3');
  });
});

// The SDK's tracer is a `TracerLike`: Tollgate's structural type accepts the real one.
const _typed: TracerLike = tracer;
void _typed;
