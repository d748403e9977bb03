/**
 * The demo's agent on a "real" model: docs/examples/support-desk.ts with `OPENAI_API_KEY` (or
 * `ANTHROPIC_API_KEY`) set runs the same tools and approval on openaiPolicy (or anthropicPolicy),
 * here against the fake server.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelPolicy } from '../../docs/examples/model.js';
import type { AgentDefinition } from '../../src/index.js';
import { Agent, agentOptionsOf } from '../../src/index.js';
import { type FakeServer, fakeServer, type Reply } from './fake-server.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-demo-'));
let desk: AgentDefinition;
let server: FakeServer;

beforeAll(async () => {
  process.env.TOLLGATE_DEMO_DIR = dir;
  process.env.TOLLGATE_DEMO_THINK_MS = '0';
  desk = (await import('../../docs/examples/support-desk.js')).default;
  server = await fakeServer();
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A streamed Chat Completions reply calling one tool, or answering (the demo's policy streams). */
function reply(call: { id: string; name: string; args: object } | string): Reply {
  const delta =
    typeof call === 'string'
      ? { role: 'assistant', content: call }
      : {
          role: 'assistant',
          tool_calls: [
            {
              index: 0,
              id: call.id,
              type: 'function',
              function: { name: call.name, arguments: JSON.stringify(call.args) },
            },
          ],
        };
  const base = { id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm' };
  const chunks = [
    { ...base, choices: [{ index: 0, delta, finish_reason: null }] },
    { ...base, choices: [], usage: { prompt_tokens: 300, completion_tokens: 20, total_tokens: 320 } },
  ];
  return { sse: `${chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('')}data: [DONE]\n\n` };
}

/** A streamed Messages API reply calling one tool, or answering (the demo's policy streams). */
function anthropicReply(call: { id: string; name: string; args: object } | string): Reply {
  const block =
    typeof call === 'string'
      ? [
          { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
          { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: call } },
        ]
      : [
          {
            type: 'content_block_start',
            index: 0,
            content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} },
          },
          {
            type: 'content_block_delta',
            index: 0,
            delta: { type: 'input_json_delta', partial_json: JSON.stringify(call.args) },
          },
        ];
  const events = [
    {
      type: 'message_start',
      message: {
        model: 'claude-sonnet-4-5-20250929',
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 300, output_tokens: 1 },
      },
    },
    ...block,
    { type: 'content_block_stop', index: 0 },
    {
      type: 'message_delta',
      delta: { stop_reason: typeof call === 'string' ? 'end_turn' : 'tool_use', stop_sequence: null },
      usage: { output_tokens: 20 },
    },
    { type: 'message_stop' },
  ];
  return { sse: events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join('') };
}

describe('the demo agent', () => {
  it('stays on its scripted policy without an API key', () => {
    expect(modelPolicy(desk.tools, {})).toBeNull();
  });

  it('answers with what the tools did: an approver who cut the refund from 129 to 60 reads "Refunded $60"', async () => {
    const goal = 'Customer ana@example.com: order A-1001 arrived broken, please refund it.';
    const edited = new Agent({ ...agentOptionsOf(desk), runId: 'edit' });
    expect(await edited.start(goal)).toBe('awaiting_approval');
    expect(edited.state.pending).toMatchObject({ tool: 'refund', args: { order: 'A-1001', amount: 129 } });
    const id = edited.state.pending?.id as string;
    const edit = { approve: true as const, note: 'partial refund', args: { order: 'A-1001', amount: 60 } };
    expect(await edited.decide({ [id]: edit })).toBe('done');
    expect(edited.state.answer).toBe('Refunded $60 of the $129 asked for A-1001 and emailed ana@example.com.');
    const email = edited.state.history.find((e) => e.role === 'assistant' && 'tool' in e && e.tool === 'send_email');
    expect(email).toMatchObject({ args: { subject: 'Your refund of $60 for A-1001' } });

    const approved = new Agent({ ...agentOptionsOf(desk), runId: 'as-asked' });
    expect(await approved.start(goal)).toBe('awaiting_approval');
    expect(await approved.decide(true, 'ok')).toBe('done');
    expect(approved.state.answer).toBe('Refunded $129 for A-1001 and emailed ana@example.com.');

    const denied = new Agent({ ...agentOptionsOf(desk), runId: 'denied' });
    expect(await denied.start(goal)).toBe('awaiting_approval');
    expect(await denied.decide(false, 'not eligible')).toBe('done');
    expect(denied.state.answer).toBe('No refund for A-1001 (denied by human: not eligible); emailed ana@example.com.');
  });

  it('runs on a real model with OPENAI_API_KEY: same tools, same approval', async () => {
    server.reply(
      reply({ id: 'call_1', name: 'lookup_order', args: { order: 'A-1001' } }),
      reply({ id: 'call_2', name: 'refund', args: { order: 'A-1001', amount: 129 } }),
      reply({ id: 'call_3', name: 'send_email', args: { to: 'ana@example.com', subject: 'Your refund' } }),
      reply('Refunded $129 for A-1001 and emailed ana@example.com.'),
    );
    const policy = modelPolicy(desk.tools, { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: `${server.url}/v1` });
    expect(policy).not.toBeNull();
    const agent = new Agent({ ...agentOptionsOf(desk), policy: policy! });
    expect(await agent.start('Customer ana@example.com: order A-1001 arrived broken, please refund it.')).toBe(
      'awaiting_approval',
    );
    expect(agent.state.pending).toMatchObject({ tool: 'refund', args: { order: 'A-1001', amount: 129 } });
    expect(await agent.decide(true, 'ok')).toBe('done');
    expect(agent.state.answer).toMatch(/Refunded \$129/);
    const first = server.requests[0]?.body;
    expect(first.model).toBe('gpt-5-mini');
    expect(first.messages[0]).toMatchObject({ role: 'system' });
    expect(first.tools.map((t: any) => t.function.name)).toEqual(['lookup_order', 'refund', 'send_email']);
    expect(first.tools[1].function.parameters.required).toEqual(['order', 'amount']);
  });

  it('runs on Claude with ANTHROPIC_API_KEY (and no OpenAI key): same tools, same approval', async () => {
    const before = server.requests.length;
    server.reply(
      anthropicReply({ id: 'toolu_1', name: 'lookup_order', args: { order: 'A-1001' } }),
      anthropicReply({ id: 'toolu_2', name: 'refund', args: { order: 'A-1001', amount: 129 } }),
      anthropicReply({ id: 'toolu_3', name: 'send_email', args: { to: 'ana@example.com', subject: 'Your refund' } }),
      anthropicReply('Refunded $129 for A-1001 and emailed ana@example.com.'),
    );
    const policy = modelPolicy(desk.tools, { ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: server.url });
    expect(policy).not.toBeNull();
    const agent = new Agent({ ...agentOptionsOf(desk), policy: policy! });
    expect(await agent.start('Customer ana@example.com: order A-1001 arrived broken, please refund it.')).toBe(
      'awaiting_approval',
    );
    expect(agent.state.pending).toMatchObject({ tool: 'refund', args: { order: 'A-1001', amount: 129 } });
    expect(await agent.decide(true, 'ok')).toBe('done');
    expect(agent.state.answer).toBe('Refunded $129 for A-1001 and emailed ana@example.com.');
    expect(agent.state.usage).toMatchObject({ inputTokens: 1_200, outputTokens: 80 });
    const requests = server.requests.slice(before);
    expect(requests.map((r) => [r.path, r.headers.authorization])).toEqual(
      Array(4).fill(['/v1/messages', 'Bearer sk-ant-test']),
    );
    const first = requests[0]?.body;
    expect(first).toMatchObject({ model: 'claude-sonnet-4-5', stream: true });
    expect(first.system).toMatch(/^You are the support desk of a small shop\./);
    expect(first.messages).toEqual([
      {
        role: 'user',
        content: [{ type: 'text', text: 'Customer ana@example.com: order A-1001 arrived broken, please refund it.' }],
      },
    ]);
    expect(first.tools.map((t: any) => t.name)).toEqual(['lookup_order', 'refund', 'send_email']);
    expect(first.tools[1].input_schema.required).toEqual(['order', 'amount']);
    // The refund's result goes back paired with the model's own id.
    const last = requests[3]?.body.messages.at(-1).content;
    expect(last).toEqual([expect.objectContaining({ type: 'tool_result', tool_use_id: 'toolu_3' })]);
  });

  it('takes TOLLGATE_MODEL as the model, and OPENAI_API_KEY before ANTHROPIC_API_KEY', async () => {
    const before = server.requests.length;
    server.reply(anthropicReply('hi'), reply('hello'));
    const env = { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: server.url, TOLLGATE_MODEL: 'claude-haiku-4-5' };
    const claude = new Agent({ ...agentOptionsOf(desk), policy: modelPolicy(desk.tools, env)! });
    expect(await claude.start('hi')).toBe('done');
    const both = { ...env, OPENAI_API_KEY: 'sk', OPENAI_BASE_URL: `${server.url}/v1`, TOLLGATE_MODEL: 'gpt-x' };
    const gpt = new Agent({ ...agentOptionsOf(desk), policy: modelPolicy(desk.tools, both)! });
    expect(await gpt.start('hi')).toBe('done');
    expect(server.requests.slice(before).map((r) => [r.path, r.body.model])).toEqual([
      ['/v1/messages', 'claude-haiku-4-5'],
      ['/v1/chat/completions', 'gpt-x'],
    ]);
  });
});
