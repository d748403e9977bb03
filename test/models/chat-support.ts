/**
 * A support desk on the AI SDK (a scripted `MockLanguageModelV3` that streams, tools written with
 * `tool()`) and the chat route a user writes for `useChat` with `chatTurn`: one run per chat id.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeUIMessageStreamToResponse, tool } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';
import { type Agent, OptionsError, RunStateError } from '../../src/index.js';
import { aiSdkPolicy, chatTurn, fromAiSdkTools } from '../../src/models/ai-sdk.js';

const usage = {
  inputTokens: { total: 40, noCache: 40, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 6, text: 6, reasoning: 0 },
};
export type Part = Record<string, unknown> & { type: string };
const finish: Part = { type: 'finish', usage, finishReason: { unified: 'stop', raw: 'stop' } };
const said = (id: string, ...pieces: string[]): Part[] => [
  { type: 'text-start', id },
  ...pieces.map((delta) => ({ type: 'text-delta', id, delta })),
  { type: 'text-end', id },
];
const call = (toolCallId: string, toolName: string, input: object): Part => ({
  type: 'tool-call',
  toolCallId,
  toolName,
  input: JSON.stringify(input),
});

/** A model that streams the next turn of `turns` at each request. */
function scriptedModel(turns: Part[][]) {
  let i = 0;
  return new MockLanguageModelV3({
    doStream: async () => {
      const parts = turns[i++] ?? [...said('t', 'nothing more'), finish];
      return {
        stream: new ReadableStream({
          start(controller) {
            for (const part of parts) controller.enqueue(part as never);
            controller.close();
          },
        }),
      };
    },
  });
}

/** The desk: it looks order A-1 up (no approval), asks to refund $60 of it (a side effect), then says so. */
export function supportDesk() {
  const refunds: { order: string; amount: number; key: string }[] = [];
  const tools = fromAiSdkTools(
    {
      lookup_order: tool({
        description: 'Find an order',
        inputSchema: z.object({ order: z.string() }),
        execute: async ({ order }) => ({ order, total: 129 }),
      }),
      refund: tool({
        description: 'Refund an order',
        inputSchema: z.object({ order: z.string(), amount: z.number() }),
        execute: async ({ order, amount }, { toolCallId }) => {
          refunds.push({ order, amount, key: toolCallId });
          return { refunded: amount };
        },
      }),
    },
    { sideEffects: ['refund'] },
  );
  const model = scriptedModel([
    [...said('a', 'Let me ', 'look.'), call('c1', 'lookup_order', { order: 'A-1' }), finish],
    [call('c2', 'refund', { order: 'A-1', amount: 60 }), finish],
    [...said('b', 'Refunded ', '$60.'), finish],
  ]);
  return { tools, refunds, policy: aiSdkPolicy({ model, tools }) };
}

/** The chat route at POST /api/chat; `other` answers every other request. */
export async function chatServer(
  make: (chatId: string) => Agent,
  other: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.writeHead(404).end(),
): Promise<{ url: string; runs: Map<string, Agent>; close(): Promise<void> }> {
  const runs = new Map<string, Agent>();
  const server: Server = createServer(async (req, res) => {
    if (req.method !== 'POST' || req.url !== '/api/chat') return other(req, res);
    let body = '';
    for await (const piece of req) body += piece;
    try {
      const stream = await chatTurn(JSON.parse(body), {
        load: (id) => runs.get(id) ?? null,
        create: (id) => {
          const agent = make(id);
          runs.set(id, agent);
          return agent;
        },
      });
      pipeUIMessageStreamToResponse({ response: res, stream });
    } catch (error) {
      const status = error instanceof RunStateError ? 409 : error instanceof OptionsError ? 400 : 500;
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: String(error) }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    runs,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
