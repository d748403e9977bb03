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
import type { AgentContext } from '../machines/types.js';
import { defineAgent } from '../src/define.js';
import { Agent } from '../src/index.js';
import { aiSdkPolicy } from '../src/models/ai-sdk.js';
import { anthropicPolicy } from '../src/models/anthropic.js';
import { openaiPolicy } from '../src/models/openai.js';
import { markModel, modelOf } from '../src/policy-model.js';
import { endRunSpan } from '../src/runtime/spans.js';
import { errorTypeOf, MAX_TRACE_TEXT, SPAN_KIND, Span, startSpan, traceText } from '../src/runtime/tracing.js';
import { MemoryStore } from '../src/stores/memory.js';
import { ManualClock } from '../src/testing/index.js';
import type { TraceContext, TracerLike } from '../src/tracer.js';
import { submitRun, Worker } from '../src/worker/index.js';
import { fakeServer, fixture } from './models/fake-server.js';
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

  it('a second drive of a run counts only its own tokens, and the budgets left in dollars and active time', async () => {
    const clock = new ManualClock(0);
    const send = recorder('send', { sideEffect: true });
    const answers = [
      { tool: 'send', args: {}, usage: { inputTokens: 10, outputTokens: 3, costUsd: 0.25 } },
      { final: 'sent', usage: { inputTokens: 4, outputTokens: 1, costUsd: 0.125 } },
    ];
    const agent = new Agent({
      tools: [send.tool],
      // Each call takes 100.4 ms of active time.
      policy: () => {
        clock.advance(100.4);
        return answers.shift() as never;
      },
      clock,
      maxCostUsd: 1,
      maxActiveMs: 1_000,
      tracer,
    });
    expect(await agent.start('mail')).toBe('awaiting_approval');
    const first = only('invoke_agent');
    expect(first.attributes).toMatchObject({
      'gen_ai.usage.input_tokens': 10,
      'gen_ai.usage.output_tokens': 3,
      'tollgate.budget.cost_usd_left': 0.75,
      'tollgate.budget.active_ms_left': 900, // 899.6, rounded
    });
    expect(only('chat').attributes).toMatchObject({
      'tollgate.usage.cost_usd': 0.25,
      'tollgate.budget.cost_usd_left': 1,
      'tollgate.budget.active_ms_left': 1_000,
    });
    exporter.reset();

    expect(await agent.decide(true, 'fine')).toBe('done');
    const second = only('invoke_agent');
    expect(second.attributes).toMatchObject({
      'tollgate.run.trigger': 'decide',
      'gen_ai.usage.input_tokens': 4,
      'gen_ai.usage.output_tokens': 1,
      'tollgate.budget.cost_usd_left': 0.625,
      'tollgate.budget.active_ms_left': 799, // 799.2, rounded
    });
    expect(only('chat').attributes).toMatchObject({
      'tollgate.usage.cost_usd': 0.125,
      'tollgate.budget.cost_usd_left': 0.75,
      'tollgate.budget.active_ms_left': 900,
    });
  });

  it('the attributes of a policy call, exactly: a final answer, several calls, and a cost not known', async () => {
    const look = recorder('look');
    const agent = new Agent({
      runId: 'x',
      tools: [look.tool],
      policy: sequence(
        {
          calls: [
            { tool: 'look', args: { q: 1 } },
            { tool: 'look', args: { q: 2 } },
          ],
          usage: { inputTokens: 5, outputTokens: 2, costUsd: 0 },
        },
        { final: 'ok', usage: { inputTokens: 6, outputTokens: 1 } },
      ),
      tracer,
    });
    expect(await agent.start('go')).toBe('done');
    const [calls, final] = named('chat');
    const common = {
      'gen_ai.operation.name': 'chat',
      'tollgate.run.id': 'x',
      'tollgate.budget.steps_left': expect.any(Number),
      'tollgate.policy.attempts': 1,
    };
    expect(calls?.attributes).toEqual({
      ...common,
      'tollgate.step': 1,
      'gen_ai.usage.input_tokens': 5,
      'gen_ai.usage.output_tokens': 2,
      'tollgate.usage.cost_usd': 0,
      'tollgate.action': 'calls',
      'tollgate.action.calls': 2,
    });
    // No price and no costUsd: the cost is not known, and left out (as are calls and an error).
    expect(final?.attributes).toEqual({
      ...common,
      'tollgate.step': 2,
      'gen_ai.usage.input_tokens': 6,
      'gen_ai.usage.output_tokens': 1,
      'tollgate.action': 'final',
    });
  });

  it('the pending count is of the pending calls only, and a standing approval says always', async () => {
    const look = recorder('look');
    const send = recorder('send', { sideEffect: true });
    const agent = new Agent({
      tools: [look.tool, send.tool],
      policy: sequence(
        {
          calls: [
            { tool: 'look', args: {} },
            { tool: 'send', args: { to: 'a' } },
            { tool: 'send', args: { to: 'b' } },
          ],
        },
        { final: 'sent' },
      ),
      tracer,
    });
    expect(await agent.start('mail')).toBe('awaiting_approval');
    expect(agent.state.pending).not.toBeNull();
    expect(only('invoke_agent').attributes['tollgate.approval.pending']).toBe(2);
    const [a, b] = agent.state.pendingCalls.map((c) => c.id);
    exporter.reset();

    expect(
      await agent.decide({ [a as string]: { approve: true, always: true }, [b as string]: { approve: false } }),
    ).toBe('done');
    const run = only('invoke_agent');
    expect(run.attributes['tollgate.approval.pending']).toBe(0);
    expect(
      run.events.map((e) => [e.attributes?.['tollgate.call.id'], e.attributes?.['tollgate.approval.always']]),
    ).toEqual([
      [a, true],
      [b, false],
    ]);
  });

  it('a cost not known under a cost budget: stopped by cost, and no error on the span', async () => {
    const look = recorder('look');
    // No costUsd and no price: under a cost budget the call spends what is left (fail closed).
    const agent = new Agent({
      tools: [look.tool],
      policy: sequence({ tool: 'look', args: {}, usage }),
      maxCostUsd: 1,
      tracer,
    });
    expect(await agent.start('go')).toBe('budget_exhausted');
    expect(agent.state.error).not.toBeNull();
    const stopped = only('invoke_agent');
    expect(stopped.attributes).toMatchObject({
      'tollgate.budget.stopped_by': 'cost',
      'tollgate.budget.cost_usd_left': 0,
    });
    expect(stopped.status.code).not.toBe(ERROR);
    expect(stopped.attributes).not.toHaveProperty('error.type');
    expect(stopped.events).toEqual([]);
  });

  it('a failed run: the run’s error on its span, as status, error.type and an exception event', async () => {
    const agent = new Agent({
      tools: [],
      policy: () => {
        throw new SyntaxError('bad answer');
      },
      policyRetries: 0,
      tracer,
    });
    expect(await agent.start('go')).toBe('failed');
    const run = only('invoke_agent');
    expect(run.status).toEqual({ code: ERROR, message: 'SyntaxError: bad answer' });
    expect(run.attributes['error.type']).toBe('SyntaxError');
    expect(run.events.map((e) => [e.name, e.attributes])).toEqual([
      ['exception', { 'exception.type': 'SyntaxError', 'exception.message': 'SyntaxError: bad answer' }],
    ]);
  });

  it('a tool no longer in the tool set at resume: its span leaves side_effect out', async () => {
    const blob = await midCall({ sideEffect: true, idempotent: true });
    exporter.reset();
    const again = Agent.resume(blob, { tools: [], policy: sequence({ final: 'gone' }), tracer });
    expect(await again.run()).toBe('done');
    const tool = only('execute_tool');
    expect(tool.attributes).toMatchObject({
      'gen_ai.tool.name': 'pay',
      'tollgate.call.recovered': true,
      'tollgate.call.outcome': 'error',
    });
    expect(tool.attributes).not.toHaveProperty('tollgate.tool.side_effect');
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

  it('names the model that answered, as the usage reports it, and leaves out one that is not a string', async () => {
    const look = recorder('look');
    const agent = new Agent({
      tools: [look.tool],
      policy: sequence(
        { tool: 'look', args: {}, usage: { ...usage, model: 'gpt-5-mini-2025-08-07' } },
        { tool: 'look', args: {}, usage: { ...usage, model: 5 } },
        { final: 3 },
      ),
      tracer,
    });
    expect(await agent.start('go')).toBe('done');
    expect(named('chat').map((s) => s.attributes['gen_ai.response.model'])).toEqual([
      'gpt-5-mini-2025-08-07',
      undefined,
      undefined,
    ]);
  });

  it('an adapter’s policy: the requested model and the one the API says answered', async () => {
    const server = await fakeServer();
    try {
      server.reply(fixture('openai-chat/final.json'));
      const client = new OpenAI({ apiKey: 'k', baseURL: `${server.url}/v1`, maxRetries: 0 });
      const agent = new Agent({
        tools: [],
        policy: openaiPolicy({ client, model: 'gpt-4.1-mini', tools: [], stream: false }),
        tracer,
      });
      expect(await agent.start('go')).toBe('done');
      expect(only('chat').attributes).toMatchObject({
        'gen_ai.request.model': 'gpt-4.1-mini',
        'gen_ai.response.model': 'gpt-4.1-mini-2025-04-14',
      });
    } finally {
      await server.close();
    }
  });

  it("the adapters mark their policies with their model, and their calls' bounds for the budgets", () => {
    const openai = new OpenAI({ apiKey: 'k', baseURL: 'http://127.0.0.1:9' });
    const anthropic = new Anthropic({ apiKey: 'k', baseURL: 'http://127.0.0.1:9' });
    // Nothing carried beside the history: the declarations of no tools and no instructions.
    const bare = Math.ceil(JSON.stringify({ instructions: '', tools: [] }).length / 4);
    expect(modelOf(openaiPolicy({ client: openai, model: 'gpt-5-mini', tools: [] }))).toEqual({
      provider: 'openai',
      model: 'gpt-5-mini',
      requestTokens: bare,
    });
    expect(
      modelOf(openaiPolicy({ client: openai, model: 'gpt-5-mini', tools: [], api: 'responses', maxOutputTokens: 900 })),
    ).toEqual({
      provider: 'openai',
      model: 'gpt-5-mini',
      requestTokens: bare,
      maxOutputTokens: 900,
      minOutputTokens: 16,
    });
    const instructed = modelOf(
      anthropicPolicy({ client: anthropic, model: 'claude-x', tools: [], instructions: 'x'.repeat(400) }),
    );
    expect(instructed).toEqual({
      provider: 'anthropic',
      model: 'claude-x',
      requestTokens: bare + 100,
      maxOutputTokens: 4096, // the adapter's default max_tokens
    });
    const model = createOpenAI({ apiKey: 'k', baseURL: 'http://127.0.0.1:9' }).chat('gpt-y');
    expect(modelOf(aiSdkPolicy({ model, tools: [] }))).toEqual({
      provider: 'openai',
      model: 'gpt-y',
      requestTokens: bare,
    });
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

describe('the span helpers', () => {
  /** A tracer that records what it is asked, its spans recording every call made on them. */
  const recording = (first?: () => unknown) => {
    const log: unknown[][] = [];
    const started: { name: string; options: unknown; context: TraceContext | undefined }[] = [];
    const tracer: TracerLike = {
      startSpan: (name, options, context) => {
        started.push({ name, options, context });
        if (first && started.length === 1) return first() as never;
        return {
          setAttribute: (...args: unknown[]) => log.push(['setAttribute', ...args]),
          addEvent: (...args: unknown[]) => log.push(['addEvent', ...args]),
          setStatus: (...args: unknown[]) => log.push(['setStatus', ...args]),
          recordException: (...args: unknown[]) => void log.push(['recordException', ...args]),
          end: () => void log.push(['end']),
        };
      },
    };
    return { tracer, log, started };
  };

  it('cuts text at 1,024 characters: exactly 1,024 are kept whole, 1,025 noted', () => {
    expect(MAX_TRACE_TEXT).toBe(1_024);
    const exact = 'x'.repeat(1_024);
    expect(traceText(exact)).toBe(exact);
    expect(traceText(`${exact}yz`)).toBe(`${exact}… (2 more)`);
    expect(traceText(`${exact}y`)).toBe(`${exact}… (1 more)`);
    expect(traceText('a\uD800b')).toBe('a\uFFFDb');
    const { tracer, log } = recording();
    const span = startSpan(tracer, 'n', SPAN_KIND.internal, null, {});
    span.fail(`Error: ${'e'.repeat(1_024 - 7)}`);
    expect(log[1]).toEqual(['setStatus', { code: ERROR, message: `Error: ${'e'.repeat(1_017)}` }]);
  });

  it('keeps finite numbers, booleans and text, and leaves out every other value', () => {
    const { tracer, log, started } = recording();
    const span = startSpan(tracer, 'n', SPAN_KIND.client, null, { a: 1.5, b: Number.NaN, c: false, d: null });
    expect(started[0]?.options).toEqual({ kind: 2, attributes: { a: 1.5, c: false } });
    span.set({
      zero: 0,
      nan: Number.NaN,
      inf: Number.POSITIVE_INFINITY,
      negInf: Number.NEGATIVE_INFINITY,
      t: true,
      s: 's',
      n: null,
      u: undefined,
      o: {} as never,
    });
    expect(log).toEqual([
      ['setAttribute', 'zero', 0],
      ['setAttribute', 't', true],
      ['setAttribute', 's', 's'],
    ]);
    span.event('e', { big: Number.MAX_VALUE, nan: Number.NaN });
    expect(log[3]).toEqual(['addEvent', 'e', { big: Number.MAX_VALUE }]);
  });

  it('reads the error type of an error text, or _OTHER', () => {
    expect(errorTypeOf('RangeError: x')).toBe('RangeError');
    expect(errorTypeOf('$a.b_c9: x')).toBe('$a.b_c9');
    expect(errorTypeOf('_E:')).toBe('_E');
    expect(errorTypeOf(`A${'b'.repeat(63)}: x`)).toBe(`A${'b'.repeat(63)}`);
    expect(errorTypeOf(`A${'b'.repeat(64)}: x`)).toBe('_OTHER'); // 65 characters: too long
    expect(errorTypeOf('see RangeError: x')).toBe('_OTHER'); // only at the start
    expect(errorTypeOf('9Error: x')).toBe('_OTHER');
    expect(errorTypeOf('My Error: x')).toBe('_OTHER');
    expect(errorTypeOf('a-b: x')).toBe('_OTHER');
    expect(errorTypeOf('Error')).toBe('_OTHER');
    expect(errorTypeOf('')).toBe('_OTHER');
  });

  it('ends a span once: a second end, and anything after the first, reaches no span', () => {
    const { tracer, log } = recording();
    const span = startSpan(tracer, 'n', SPAN_KIND.internal, null, {});
    span.set({ a: 1 });
    span.end();
    span.end();
    span.set({ b: 2 });
    span.event('late');
    span.fail('Error: late');
    expect(log).toEqual([['setAttribute', 'a', 1], ['end']]);
  });

  it('a span whose end throws is still ended once', () => {
    let ends = 0;
    const { tracer } = recording(() => ({
      end: () => {
        ends++;
        throw new Error('exporter down');
      },
    }));
    const span = startSpan(tracer, 'n', SPAN_KIND.internal, null, {});
    span.end();
    span.end();
    expect(ends).toBe(1);
  });

  it('a start that fails, or gives no span, parents nothing: the next span is a root', () => {
    const fails = () => {
      throw new Error('startSpan failed');
    };
    for (const first of [fails, () => null, () => 42, () => 'span', () => undefined]) {
      const { tracer, started } = recording(first);
      const parent = startSpan(tracer, 'parent', SPAN_KIND.internal, null, {});
      expect(parent).toBe(Span.none);
      expect(parent.context).toBeUndefined();
      parent.end();
      startSpan(tracer, 'child', SPAN_KIND.internal, parent, {});
      expect(started.map((s) => [s.name, s.context])).toEqual([
        ['parent', undefined],
        ['child', undefined],
      ]);
    }
    expect(startSpan(undefined, 'n', SPAN_KIND.internal, null, {})).toBe(Span.none);
  });

  it('a drive’s span names the budget that stopped it only when it ended budget_exhausted', () => {
    // The machine clears stoppedBy on every way out of budget_exhausted; the span does not rely on it.
    const context = {
      steps: 3,
      usage: { inputTokens: 19, outputTokens: 7, costUsd: 0 },
      calls: [],
      stoppedBy: 'steps',
      limits: { maxSteps: 3, maxTokens: null, maxActiveMs: null, maxCostUsd: null },
      activeMs: 0,
      error: null,
    } as unknown as AgentContext;
    for (const status of ['done', 'budget_exhausted'] as const) {
      endRunSpan(startSpan(tracer, 'invoke_agent', SPAN_KIND.internal, null, {}), context, status, usage);
    }
    const [done, stopped] = named('invoke_agent');
    expect(done?.attributes).toEqual({
      'tollgate.run.status': 'done',
      'tollgate.step': 3,
      'gen_ai.usage.input_tokens': 9,
      'gen_ai.usage.output_tokens': 4,
      'tollgate.approval.pending': 0,
      'tollgate.budget.steps_left': 0,
    });
    expect(stopped?.attributes['tollgate.budget.stopped_by']).toBe('steps');
  });

  it('a started span parents the next through a context holding it', () => {
    const { tracer, started } = recording();
    const parent = startSpan(tracer, 'parent', SPAN_KIND.internal, null, {});
    expect(parent).not.toBe(Span.none);
    startSpan(tracer, 'child', SPAN_KIND.internal, parent, {});
    const context = started[1]?.context;
    expect(context?.getValue(Symbol.for('OpenTelemetry Context Key SPAN'))).toBeTypeOf('object');
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
