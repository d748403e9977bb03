/**
 * Typed tools and policies (issue 11): a misspelt tool name, or arguments of the wrong shape, in a
 * typed policy are compile errors, while untyped code compiles as before. `tsc` checks this file
 * (test/ is in tsconfig's include): each `@ts-expect-error` fails the type check if the line it
 * guards ever compiles, so a typing regression breaks the build, not only this test.
 */
import * as v from 'valibot';
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import type { Json, JsonObject } from '../../machines/types.js';
import { Agent } from '../../src/agent.js';
import { defineTool } from '../../src/tool-schema.js';
import type {
  Action,
  ActionOf,
  AgentOptions,
  CallOf,
  Policy,
  Tool,
  ToolArgs,
  ToolContext,
  ToolInput,
  ToolName,
} from '../../src/types.js';

/** A checkpoint to resume in the tests below (they check types; running them is harmless). */
const blob = new Agent({ tools: [], policy: () => ({ final: 1 }) }).checkpoint();

const sendEmail = defineTool({
  name: 'send_email',
  description: 'Send an email',
  input: z.object({ to: z.email(), body: z.string(), cc: z.array(z.email()).optional() }),
  sideEffect: true,
  fn: async ({ to, body }) => ({ sent: `${to}:${body.length}` }),
});

const search = defineTool({
  name: 'search',
  input: z.object({ q: z.string().trim(), limit: z.number().int().default(5) }),
  fn: ({ q, limit }) => [q, limit],
});

const clock = defineTool({ name: 'clock', fn: () => '12:00' });

const lookup = defineTool({ name: 'lookup', fn: ({ id }: { id: number }) => id });

const tools = [sendEmail, search, clock, lookup];
type Tools = typeof tools;

describe('defineTool', () => {
  it('infers the name literal and the schema types', () => {
    expectTypeOf<ToolName<typeof sendEmail>>().toEqualTypeOf<'send_email'>();
    expectTypeOf<ToolInput<typeof sendEmail>>().toEqualTypeOf<{
      to: string;
      body: string;
      cc?: string[] | undefined;
    }>();
    expectTypeOf(sendEmail).toExtend<Tool>();
  });

  it('gives the policy the schema input and the tool the schema output', () => {
    // `limit` has a default: the model may leave it out, the tool always gets it.
    expectTypeOf<ToolInput<typeof search>>().toEqualTypeOf<{ q: string; limit?: number | undefined }>();
    expectTypeOf<ToolArgs<typeof search>>().toEqualTypeOf<{ q: string; limit: number }>();
    expectTypeOf(search.fn).parameter(0).toEqualTypeOf<{ q: string; limit: number }>();
  });

  it('types fn and needsApproval from the schema without annotations', () => {
    defineTool({
      name: 'refund',
      input: z.object({ amount: z.number() }),
      needsApproval: (args, ctx) => {
        expectTypeOf(args).toEqualTypeOf<{ amount: number }>();
        expectTypeOf(ctx.history).toExtend<readonly unknown[]>();
        return args.amount > 100;
      },
      fn: (args, key, ctx) => {
        expectTypeOf(args).toEqualTypeOf<{ amount: number }>();
        expectTypeOf(key).toEqualTypeOf<string>();
        expectTypeOf(ctx).toEqualTypeOf<ToolContext>();
        return args.amount;
      },
    });
  });

  it('infers the schema whatever the order of the keys', () => {
    const late = defineTool({
      fn: (args) => args.n * 2,
      name: 'late',
      input: z.object({ n: z.number() }),
    });
    expectTypeOf(late.fn).parameter(0).toEqualTypeOf<{ n: number }>();
  });

  it('takes any Standard Schema (valibot)', () => {
    const tag = defineTool({
      name: 'tag',
      input: v.object({ label: v.pipe(v.string(), v.minLength(1)) }),
      fn: ({ label }) => label,
    });
    expectTypeOf<ToolInput<typeof tag>>().toEqualTypeOf<{ label: string }>();
  });

  it('reads the arguments from fn without a schema, and any JSON object when fn names none', () => {
    expectTypeOf<ToolInput<typeof lookup>>().toEqualTypeOf<{ id: number }>();
    expectTypeOf<ToolInput<typeof clock>>().toEqualTypeOf<JsonObject>();
    defineTool({
      name: 'echo',
      fn: (args) => {
        expectTypeOf(args).toEqualTypeOf<JsonObject>();
        return args;
      },
    });
  });

  it('refuses a fn whose arguments do not match the schema', () => {
    defineTool({
      name: 'bad',
      input: z.object({ n: z.number() }),
      // @ts-expect-error: the schema's output has no `s`
      fn: ({ s }: { s: string }) => s,
    });
  });
});

describe('typed policies', () => {
  it('accept calls of their tools with the right arguments', () => {
    const policy: Policy<Tools> = (history, ctx) => {
      expectTypeOf(ctx.step).toEqualTypeOf<number>();
      if (history.length === 1) return { tool: 'search', args: { q: 'refunds' } };
      if (history.length === 2) return { tool: 'clock' };
      if (history.length === 3) {
        return {
          calls: [
            { tool: 'send_email', args: { to: 'a@b.c', body: 'hi' }, id: 'call_1' },
            { tool: 'lookup', args: { id: 7 } },
          ],
          text: 'two at once',
        };
      }
      return { final: { ok: true }, usage: { inputTokens: 1, outputTokens: 1 } };
    };
    expectTypeOf(policy).returns.toExtend<ActionOf<Tools> | Promise<ActionOf<Tools>>>();
  });

  it('refuse a misspelt tool name', () => {
    // @ts-expect-error: no tool is named 'serch'
    const typo: ActionOf<Tools> = { tool: 'serch', args: { q: 'refunds' } };
    // @ts-expect-error: no tool is named 'send_mail'
    const policy: Policy<Tools> = () => ({ tool: 'send_mail', args: { to: 'a@b.c', body: 'hi' } });
    void [typo, policy];
  });

  it('refuse arguments of the wrong shape', () => {
    // @ts-expect-error: q is a string
    const wrongType: ActionOf<Tools> = { tool: 'search', args: { q: 42 } };
    // @ts-expect-error: body is required
    const missing: ActionOf<Tools> = { tool: 'send_email', args: { to: 'a@b.c' } };
    // @ts-expect-error: send_email's arguments are required
    const none: ActionOf<Tools> = { tool: 'send_email' };
    // @ts-expect-error: search has no argument `query`
    const extra: ActionOf<Tools> = { tool: 'search', args: { q: 'x', query: 'x' } };
    // @ts-expect-error: lookup takes { id: number } (from fn, no schema)
    const fromFn: ActionOf<Tools> = { tool: 'lookup', args: { id: '7' } };
    void [wrongType, missing, none, extra, fromFn];
  });

  it('refuse a calls entry with an unknown tool or wrong arguments', () => {
    const unknownTool: ActionOf<Tools> = {
      // @ts-expect-error: no tool is named 'delete_all'
      calls: [{ tool: 'search', args: { q: 'x' } }, { tool: 'delete_all' }],
    };
    const wrongArgs: ActionOf<Tools> = {
      // @ts-expect-error: lookup's id is a number
      calls: [{ tool: 'lookup', args: { id: 'seven' } }],
    };
    void [unknownTool, wrongArgs];
  });

  it('check inline policies against the tools the Agent is given', () => {
    new Agent({ tools, policy: () => ({ tool: 'clock' }) });
    new Agent({
      tools,
      policy: (history) => (history.length > 3 ? { final: 'done' } : { tool: 'search', args: { q: 'x' } }),
    });
    // @ts-expect-error: no tool is named 'clok'
    new Agent({ tools, policy: () => ({ tool: 'clok' }) });
    // @ts-expect-error: search's q is a string
    new Agent({ tools, policy: (_history, _ctx) => ({ tool: 'search', args: { q: 1 } }) });
    // @ts-expect-error: no tool is named 'clok'
    Agent.resume(blob, { tools, policy: async () => ({ tool: 'clok' }) });
  });

  it('infer the tools from `tools`, never from the policy', () => {
    const agent = new Agent({ tools: [search, clock], policy: () => ({ tool: 'clock' }) });
    expectTypeOf(agent).toEqualTypeOf<Agent<(typeof search | typeof clock)[]>>();
    // @ts-expect-error: lookup is not one of this agent's tools
    new Agent({ tools: [search, clock], policy: () => ({ tool: 'lookup', args: { id: 1 } }) });
  });

  it('take Policy<any>, a policy of any tools (an adapter not generic over its tools)', () => {
    const adapter: Policy<any> = async () => ({ tool: 'whatever' });
    new Agent({ tools, policy: adapter });
    expectTypeOf<ActionOf<any>>().toBeAny();
  });
});

describe('untyped code compiles as before', () => {
  const untyped: Policy = () => ({ tool: 'anything', args: { x: 1 } });

  it('Policy and Tool without type arguments are the untyped ones', () => {
    expectTypeOf<ActionOf<readonly Tool[]>>().toEqualTypeOf<Action>();
    expectTypeOf<Policy>().returns.toEqualTypeOf<Action | Promise<Action>>();
    const loose: Tool<any> = { name: 'x', fn: (args) => args };
    const list: Tool[] = [loose, sendEmail, search, clock];
    new Agent({ tools: list, policy: untyped });
  });

  it('an untyped policy fits an agent with no tools, inline tool literals or a tools array', () => {
    new Agent({ tools: [], policy: untyped });
    new Agent({ tools: [{ name: 'echo', fn: (args) => args }], policy: untyped });
    const literals = [{ name: 'a', fn: () => 1, sideEffect: true }];
    new Agent({ tools: literals, policy: untyped });
    new Agent({ tools: [{ name: 'echo', fn: () => 1 }], policy: () => ({ tool: 'not-echo' }) });
    const options: AgentOptions = { tools: [], policy: untyped, maxSteps: 3 };
    new Agent(options);
    Agent.resume(blob, { tools: literals, policy: untyped });
  });

  it('one untyped tool among typed ones makes the agent untyped (all or nothing)', () => {
    const mixed = [search, { name: 'raw', fn: () => 1 }];
    expectTypeOf<ActionOf<typeof mixed>>().toEqualTypeOf<Action>();
    new Agent({ tools: mixed, policy: untyped });
  });

  it('a policy declared untyped (an adapter, scriptedPolicy) makes the agent untyped', () => {
    // `Policy` is `Policy<readonly Tool[]>`: Tools is inferred from it too, as the wider type.
    expectTypeOf(new Agent({ tools, policy: untyped })).toEqualTypeOf<Agent<readonly Tool[]>>();
    expectTypeOf(new Agent({ tools, policy: untyped as Policy<any> })).toEqualTypeOf<Agent<any>>();
    // An inline policy has no declared type: it is checked against the tools.
    // @ts-expect-error: no tool is named 'anything'
    new Agent({ tools, policy: () => ({ tool: 'anything', args: { x: 1 } }) });
  });

  it('a policy typed for other tools is refused', () => {
    const other: Policy<[typeof search]> = () => ({ tool: 'search', args: { q: 'x' } });
    // @ts-expect-error: the policy's tools are not the agent's
    new Agent({ tools: [clock], policy: other });
    new Agent({ tools: [search], policy: other });
  });

  it('a typed policy is a Policy, and a policy of some tools one of more tools', () => {
    const typed: Policy<Tools> = () => ({ tool: 'clock' });
    const asUntyped: Policy = typed;
    const wrap = (inner: Policy): Policy => inner;
    wrap(typed);
    const few: Policy<[typeof clock]> = () => ({ tool: 'clock' });
    const more: Policy<Tools> = few;
    // @ts-expect-error: a policy of all the tools may call one that `[typeof clock]` lacks
    const fewer: Policy<[typeof clock]> = typed;
    function generic<T extends readonly Tool[]>(policy: Policy<T>): Policy {
      return policy;
    }
    void [asUntyped, more, fewer, generic];
  });

  it('the runtime can hold typed options as options of any tools', () => {
    function keep<T extends readonly Tool[]>(
      options: AgentOptions<T>,
    ): { policy: Policy<any>; tools: readonly Tool[] } {
      const all: AgentOptions<any> = options;
      return { policy: all.policy, tools: options.tools };
    }
    void keep;
  });

  it('CallOf and the final action', () => {
    expectTypeOf<CallOf<Tools>['tool']>().toEqualTypeOf<'send_email' | 'search' | 'clock' | 'lookup'>();
    const answer: ActionOf<Tools> = { final: ['any', { json: null }] satisfies Json };
    void answer;
  });
});
