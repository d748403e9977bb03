/**
 * A local HTTP server that speaks a model API's wire format from fixtures: each request gets the
 * next reply (JSON with its status and headers, or a server-sent-event stream), and every request
 * is recorded for the test to read. The real SDK clients are pointed at it; nothing leaves the
 * machine.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

const fixtures = join(import.meta.dirname, '..', 'fixtures');

/** A reply: JSON (`status`, `headers`, `body`), an SSE stream, or a reply that never comes. */
export type Reply =
  | { status: number; headers?: Record<string, string>; body: unknown }
  | { sse: string; delayMs?: number; hold?: { after: string; until: Promise<void> } }
  | { hang: true };

/** A fixture file: `<api>/<name>.json` is a JSON reply, `<api>/<name>.sse` a recorded stream body. */
export function fixture(path: string): Reply {
  const text = readFileSync(join(fixtures, path), 'utf8');
  return path.endsWith('.sse') ? { sse: text } : (JSON.parse(text) as Reply);
}

export interface Recorded {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
}

export interface FakeServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  requests: Recorded[];
  /** Queues replies, served in order; a request with none left gets a 500 that says so. */
  reply(...replies: Reply[]): void;
  /** Requests whose connection the client closed before the reply ended (an aborted call). */
  aborted: number;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? null : JSON.parse(text);
}

export async function fakeServer(): Promise<FakeServer> {
  const queue: Reply[] = [];
  const requests: Recorded[] = [];
  const state = { aborted: 0 };
  const server: Server = createServer(async (req, res) => {
    const body = await readBody(req);
    requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
    res.on('close', () => {
      if (!res.writableFinished) state.aborted++;
    });
    const reply = queue.shift();
    if (!reply) {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'fake server: no reply queued', type: 'test' } }));
      return;
    }
    if ('hang' in reply) return;
    if ('sse' in reply) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      // One event per write, as a server flushes them.
      const events = reply.sse.split(/(?<=\n\n)/);
      let hold = reply.hold;
      for (const event of events) {
        if (res.destroyed) return;
        res.write(event);
        await new Promise((resolve) => setTimeout(resolve, reply.delayMs ?? 0));
        // Holds the rest of the stream back, after the first event with the given text, until the
        // test has seen what came so far.
        if (hold && event.includes(hold.after)) {
          await hold.until;
          hold = undefined;
        }
      }
      res.end();
      return;
    }
    res.writeHead(reply.status, reply.headers ?? { 'content-type': 'application/json' });
    res.end(JSON.stringify(reply.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    reply: (...replies) => queue.push(...replies),
    get aborted() {
      return state.aborted;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
