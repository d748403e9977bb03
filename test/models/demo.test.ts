/**
 * The demo's agent on a "real" model: examples/support-desk.ts with `OPENAI_API_KEY` set runs
 * the same tools and approval on openaiPolicy (here against the fake server).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelPolicy } from '../../examples/model.js';
import type { AgentDefinition } from '../../src/index.js';
import { Agent, agentOptionsOf } from '../../src/index.js';
import { type FakeServer, fakeServer, type Reply } from './fake-server.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-demo-'));
let desk: AgentDefinition;
let server: FakeServer;

beforeAll(async () => {
  process.env.TOLLGATE_DEMO_DIR = dir;
  process.env.TOLLGATE_DEMO_THINK_MS = '0';
  desk = (await import('../../examples/support-desk.js')).default;
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

describe('the demo agent', () => {
  it('stays on its scripted policy without an API key', () => {
    expect(modelPolicy(desk.tools, {})).toBeNull();
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
});
