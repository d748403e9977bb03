/**
 * A strict-TypeScript user's view of the adapters: the policy is typed by the tools it is given,
 * fits an agent of those tools and no other, and the options are the SDKs' own types. `tsc`
 * checks this file: each `@ts-expect-error` fails the type check if the line it guards compiles.
 */

import { createOpenAI } from '@ai-sdk/openai';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { type ActionOf, Agent, defineTool, OptionsError, type Policy, type Tool } from '../../src/index.js';
import { aiSdkPolicy } from '../../src/models/ai-sdk.js';
import { anthropicPolicy } from '../../src/models/anthropic.js';
import { openaiPolicy } from '../../src/models/openai.js';
import { tools } from './support.js';

const openai = new OpenAI({ apiKey: 'k', baseURL: 'http://127.0.0.1:9/v1' });
const anthropic = new Anthropic({ apiKey: 'k', baseURL: 'http://127.0.0.1:9' });
const model = createOpenAI({ apiKey: 'k', baseURL: 'http://127.0.0.1:9/v1' }).chat('m');

const other = defineTool({ name: 'other', input: z.object({ n: z.number() }), fn: ({ n }) => n });

describe('typed adapters', () => {
  it('give a policy of the tools they were given', () => {
    const policies = [
      openaiPolicy({ client: openai, model: 'gpt-5-mini', tools }),
      openaiPolicy({ client: openai, model: 'gpt-5-mini', tools, api: 'responses' }),
      anthropicPolicy({ client: anthropic, model: 'claude-sonnet-4-5', tools }),
      aiSdkPolicy({ model, tools }),
    ];
    for (const policy of policies) {
      expectTypeOf(policy).toEqualTypeOf<Policy<typeof tools>>();
      expectTypeOf<ReturnType<typeof policy>>().toEqualTypeOf<
        ActionOf<typeof tools> | Promise<ActionOf<typeof tools>>
      >();
      new Agent({ tools, policy });
      // @ts-expect-error: a policy of lookup_order and refund does not fit an agent of other tools
      new Agent({ tools: [other] as const, policy });
    }
  });

  it('take untyped tools, and give an untyped policy', () => {
    const untyped: Tool[] = [{ name: 'search', fn: () => 'ok' }];
    const policy = openaiPolicy({ client: openai, model: 'm', tools: untyped });
    expectTypeOf(policy).toEqualTypeOf<Policy<Tool[]>>();
    new Agent({ tools: untyped, policy });
  });

  it("type their options with the SDK's own types", () => {
    openaiPolicy({ client: openai, model: 'm', tools, request: { temperature: 0, parallel_tool_calls: false } });
    anthropicPolicy({
      client: anthropic,
      model: 'm',
      tools,
      request: { metadata: { user_id: 'u-1' }, tool_choice: { type: 'any' } },
    });
    aiSdkPolicy({ model, tools, request: { temperature: 0 } });
    // @ts-expect-error: an Anthropic client is not an OpenAI client
    expect(() => openaiPolicy({ client: anthropic, model: 'm', tools })).not.toThrow();
    // @ts-expect-error: api is 'chat' or 'responses'
    expect(() => openaiPolicy({ client: openai, model: 'm', tools, api: 'completions' })).toThrow(OptionsError);
  });

  it('check their options when made, naming the one that is wrong', () => {
    expect(() => openaiPolicy({ client: openai, model: '', tools })).toThrow(
      'openaiPolicy: model must be a non-empty string',
    );
    expect(() => anthropicPolicy({ client: anthropic, model: 'm', tools, maxOutputTokens: 0 })).toThrow(
      'anthropicPolicy: maxOutputTokens must be a positive integer, got 0',
    );
    // @ts-expect-error: a model name is not a language model
    expect(() => aiSdkPolicy({ model: 'gpt-5-mini', tools })).toThrow(
      `aiSdkPolicy: model must be a language model (such as openai('gpt-5-mini')), got "gpt-5-mini"`,
    );
    const unnamed = { ...other, name: '' };
    expect(() => openaiPolicy({ client: openai, model: 'm', tools: [unnamed] })).toThrow(OptionsError);
  });
});
