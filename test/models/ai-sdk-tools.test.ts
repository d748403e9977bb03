/**
 * `fromAiSdkTools`: tools written with the AI SDK's `tool()` run under Tollgate's gate: the side
 * effects named in `sideEffects` wait for a human, `needsApproval` decides per call, the schema
 * (zod 4 or `ai`'s `jsonSchema()`) is declared to the model as it is and checks the arguments
 * before anything runs, and what cannot be gated is refused.
 */
import { jsonSchema, tool } from 'ai';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { Agent, OptionsError, type Policy, toolDeclarations } from '../../src/index.js';
import { fromAiSdkTools } from '../../src/models/ai-sdk.js';

/** A policy that calls `calls` one step after another, then answers. */
function calling(...calls: { tool: string; args: Record<string, unknown> }[]): Policy {
  let i = 0;
  return async () => {
    const call = calls[i++];
    return call ? { tool: call.tool, args: call.args } : { final: 'done' };
  };
}

function desk() {
  const refunded: { order: string; amount: number; toolCallId: string }[] = [];
  const lookup = vi.fn(async ({ order }: { order: string }) => ({ order, total: 129 }));
  const tools = {
    lookup_order: tool({
      description: 'Find an order',
      inputSchema: z.object({ order: z.string() }),
      execute: lookup,
    }),
    refund: tool({
      description: 'Refund an order',
      inputSchema: jsonSchema<{ order: string; amount: number }>(
        {
          type: 'object',
          properties: { order: { type: 'string' }, amount: { type: 'number' } },
          required: ['order', 'amount'],
          additionalProperties: false,
        },
        {
          validate: (value) => {
            const v = value as { amount?: unknown };
            return typeof v.amount === 'number' && v.amount > 0
              ? { success: true, value: value as { order: string; amount: number } }
              : { success: false, error: new Error('amount must be a positive number') };
          },
        },
      ),
      execute: async ({ order, amount }, { toolCallId }) => {
        refunded.push({ order, amount, toolCallId });
        return { refunded: amount };
      },
    }),
  };
  return { tools, refunded, lookup };
}

describe('fromAiSdkTools', () => {
  it('runs a pure tool unasked, and holds a side effect for a human; the call id given to execute is the idempotency key', async () => {
    const { tools, refunded, lookup } = desk();
    const agent = new Agent({
      runId: 'r1',
      tools: fromAiSdkTools(tools, { sideEffects: ['refund'], idempotent: ['refund'] }),
      policy: calling(
        { tool: 'lookup_order', args: { order: 'A-1' } },
        { tool: 'refund', args: { order: 'A-1', amount: 60 } },
      ),
    });
    expect(await agent.start('refund A-1')).toBe('awaiting_approval');
    expect(lookup).toHaveBeenCalledTimes(1);
    expect(refunded).toEqual([]);
    const [pending] = agent.state.pendingCalls;
    expect(pending).toMatchObject({ tool: 'refund', args: { order: 'A-1', amount: 60 } });
    expect(await agent.decide(true)).toBe('done');
    expect(refunded).toEqual([{ order: 'A-1', amount: 60, toolCallId: 'r1:2' }]);
    expect(
      agent.state.history.filter((e) => e.role === 'tool').map((e) => ('result' in e ? e.result : e.error)),
    ).toEqual([{ order: 'A-1', total: 129 }, { refunded: 60 }]);
  });

  it('checks the arguments with the tool’s own schema before anyone is asked: refused ones are an observation, and nothing runs', async () => {
    const { tools, refunded } = desk();
    const agent = new Agent({
      tools: fromAiSdkTools(tools, { sideEffects: ['refund'] }),
      policy: calling({ tool: 'refund', args: { order: 'A-1', amount: -5 } }),
    });
    expect(await agent.start('go')).toBe('done');
    expect(refunded).toEqual([]);
    expect(agent.state.history[2]).toMatchObject({
      role: 'tool',
      error: expect.stringMatching(/amount must be a positive number/),
    });
  });

  it('declares each tool to the model with its description and the JSON Schema it was written with', () => {
    const { tools } = desk();
    const declarations = toolDeclarations(fromAiSdkTools(tools, { sideEffects: ['refund'] }));
    expect(declarations.map((d) => [d.name, d.description])).toEqual([
      ['lookup_order', 'Find an order'],
      ['refund', 'Refund an order'],
    ]);
    expect(declarations[0]?.parameters).toMatchObject({ type: 'object', properties: { order: { type: 'string' } } });
    expect(declarations[1]?.parameters).toEqual({
      type: 'object',
      properties: { order: { type: 'string' }, amount: { type: 'number' } },
      required: ['order', 'amount'],
      additionalProperties: false,
    });
  });

  it('lets needsApproval decide per call; a rule that throws asks the human', async () => {
    const execute = vi.fn(async ({ amount }: { amount: number }) => ({ sent: amount }));
    const needsApproval = vi.fn(async ({ amount }: { amount: number }, _options: { messages: unknown[] }) => {
      if (amount === 13) throw new Error('unlucky');
      return amount > 100;
    });
    const make = (amount: number) =>
      new Agent({
        tools: fromAiSdkTools(
          { pay: tool({ inputSchema: z.object({ amount: z.number() }), needsApproval, execute }) },
          { sideEffects: ['pay'] },
        ),
        policy: calling({ tool: 'pay', args: { amount } }),
      });
    expect(await make(20).start('go')).toBe('done');
    expect(execute).toHaveBeenCalledTimes(1);
    expect(needsApproval.mock.calls[0]?.[1]).toMatchObject({ messages: [] });
    expect(await make(500).start('go')).toBe('awaiting_approval');
    expect(await make(13).start('go')).toBe('awaiting_approval');
    expect(execute).toHaveBeenCalledTimes(1);
  });

  it('asks a description function (ai 7) once, with an empty context; one that fails is refused', () => {
    const execute = async () => 1;
    const described = fromAiSdkTools(
      { d: { description: (o: { context: object }) => `Dyn ${JSON.stringify(o.context)}`, execute } },
      { sideEffects: [] },
    );
    expect(described[0]?.description).toBe('Dyn {}');
    const failing = {
      d: {
        description: (o: { context: { tenant: { name: string } } }) => o.context.tenant.name,
        execute,
      },
    };
    expect(() => fromAiSdkTools(failing, { sideEffects: [] })).toThrow(
      /description function failed without a tool context/,
    );
  });

  it('asks for a pure tool whose needsApproval is true', async () => {
    const agent = new Agent({
      tools: fromAiSdkTools(
        { peek: tool({ inputSchema: z.object({}), needsApproval: true, execute: async () => 'ok' }) },
        { sideEffects: [] },
      ),
      policy: calling({ tool: 'peek', args: {} }),
    });
    expect(await agent.start('go')).toBe('awaiting_approval');
  });

  it('gives the last value of a tool that streams preliminary results', async () => {
    const agent = new Agent({
      tools: fromAiSdkTools(
        {
          count: tool({
            inputSchema: z.object({}),
            async *execute() {
              yield { step: 1 };
              yield { step: 2, done: true };
            },
          }),
        },
        { sideEffects: [] },
      ),
      policy: calling({ tool: 'count', args: {} }),
    });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.history[2]).toMatchObject({ role: 'tool', result: { step: 2, done: true } });
  });

  it('refuses what it cannot gate, and a sideEffects list that names no tool', () => {
    const { tools } = desk();
    const refuse = (make: () => unknown, message: RegExp) => {
      expect(make).toThrow(OptionsError);
      expect(make).toThrow(message);
    };
    refuse(() => fromAiSdkTools(tools, {} as never), /sideEffects must list the tools that change the world/);
    refuse(
      () => fromAiSdkTools(tools, { sideEffects: ['refnd' as 'refund'] }),
      /sideEffects names "refnd", not among the tools/,
    );
    refuse(
      () => fromAiSdkTools(tools, { sideEffects: [], idempotent: ['refund'] }),
      /idempotent names "refund", which are not sideEffects/,
    );
    const unasked = { pay: tool({ inputSchema: z.object({}), needsApproval: false, execute: async () => 1 }) };
    refuse(() => fromAiSdkTools(unasked, { sideEffects: ['pay'] }), /side effect with needsApproval: false/);
    const noExecute = { ask: tool({ inputSchema: z.object({ q: z.string() }) }) };
    refuse(() => fromAiSdkTools(noExecute, { sideEffects: [] }), /has no execute function/);
    const provider = {
      search: { type: 'provider' as const, id: 'openai.web_search', args: {}, execute: async () => 1 },
    };
    refuse(() => fromAiSdkTools(provider, { sideEffects: [] }), /is a provider tool/);
    refuse(
      () => fromAiSdkTools({ bad: { inputSchema: 42, execute: () => 1 } }, { sideEffects: [] }),
      /inputSchema must be/,
    );
  });
});
