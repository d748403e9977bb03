/**
 * A run started from messages: every adapter sends its system entries in the API's instructions
 * field (after the adapter's own `instructions`), never as a turn, and the earlier turns as the
 * conversation they were.
 */
import { createOpenAI } from '@ai-sdk/openai';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { HistoryEntry } from '../../src/index.js';
import { aiSdkPolicy } from '../../src/models/ai-sdk.js';
import { anthropicPolicy } from '../../src/models/anthropic.js';
import { openaiPolicy } from '../../src/models/openai.js';
import { instructionsOf, turnsOf } from '../../src/models/turns.js';
import { type FakeServer, fakeServer, fixture } from './fake-server.js';
import { policyContext, tools } from './support.js';

/** A conversation as `agent.start(messages)` records it: two system entries, an earlier turn, the ask. */
const conversation: HistoryEntry[] = [
  { role: 'system', content: 'You answer for the refunds desk.' },
  { role: 'system', content: 'Never refund more than the order total.' },
  { role: 'user', content: 'Hi, order A-1001 arrived broken.' },
  { role: 'assistant', content: 'Sorry to hear it. Do you want a refund?' },
  { role: 'user', content: 'Yes, refund it.' },
];
const adapterText = 'You are a support agent.';
const joined = `${adapterText}\n\nYou answer for the refunds desk.\n\nNever refund more than the order total.`;

describe('instructionsOf and turnsOf', () => {
  it('join the adapter instructions and the system entries; the turns leave the system entries out', () => {
    expect(instructionsOf(conversation, adapterText)).toBe(joined);
    expect(instructionsOf(conversation, undefined)).toBe(
      'You answer for the refunds desk.\n\nNever refund more than the order total.',
    );
    expect(instructionsOf([{ role: 'user', content: 'go' }], undefined)).toBeUndefined();
    expect(turnsOf(conversation)).toEqual([
      { role: 'user', text: 'Hi, order A-1001 arrived broken.' },
      { role: 'assistant', text: 'Sorry to hear it. Do you want a refund?', calls: [] },
      { role: 'user', text: 'Yes, refund it.' },
    ]);
  });
});

describe('every adapter sends a run’s system entries as its instructions', () => {
  let server: FakeServer;
  beforeEach(async () => {
    server = await fakeServer();
  });
  afterEach(() => server.close());
  const openai = () => new OpenAI({ apiKey: 'test-key', baseURL: `${server.url}/v1` });

  it('OpenAI chat: one system message first, then the earlier turn and the ask', async () => {
    server.reply(fixture('openai-chat/final.json'));
    const policy = openaiPolicy({ client: openai(), model: 'gpt-4.1-mini', tools, instructions: adapterText });
    await policy(conversation, policyContext());
    expect(server.requests[0]?.body.messages).toEqual([
      { role: 'system', content: joined },
      { role: 'user', content: 'Hi, order A-1001 arrived broken.' },
      { role: 'assistant', content: 'Sorry to hear it. Do you want a refund?' },
      { role: 'user', content: 'Yes, refund it.' },
    ]);
  });

  it('OpenAI responses: the instructions field, no system item in the input', async () => {
    server.reply(fixture('openai-responses/final.json'));
    const policy = openaiPolicy({ client: openai(), model: 'gpt-4.1-mini', api: 'responses', tools, stream: false });
    await policy(conversation, policyContext());
    const body = server.requests[0]?.body;
    expect(body.instructions).toBe('You answer for the refunds desk.\n\nNever refund more than the order total.');
    expect(JSON.stringify(body.input)).not.toContain('refunds desk');
    expect(body.input.map((item: any) => item.role)).toEqual(['user', 'assistant', 'user']);
  });

  it('Anthropic: the system field, the turns as user and assistant messages', async () => {
    server.reply(fixture('anthropic/final.json'));
    const client = new Anthropic({ apiKey: 'test-key', baseURL: server.url });
    const policy = anthropicPolicy({
      client,
      model: 'claude-sonnet-4-5',
      tools,
      instructions: adapterText,
      stream: false,
    });
    await policy(conversation, policyContext());
    const body = server.requests[0]?.body;
    expect(body.system).toBe(joined);
    expect(body.messages.map((m: any) => m.role)).toEqual(['user', 'assistant', 'user']);
  });

  it('the AI SDK: one system message first', async () => {
    server.reply(fixture('openai-chat/final.json'));
    const model = createOpenAI({ apiKey: 'test-key', baseURL: `${server.url}/v1` }).chat('gpt-4.1-mini');
    const policy = aiSdkPolicy({ model, tools, instructions: adapterText, stream: false });
    await policy(conversation, policyContext());
    const messages = server.requests[0]?.body.messages;
    expect(messages[0]).toEqual({ role: 'system', content: joined });
    expect(messages.map((m: any) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
  });
});
