/**
 * The inbox embedded in a server of the application's own, never `listen()`ing: through
 * `inbox.fetch` directly (the Fetch API), and inside a plain `node:http` server with
 * `getRequestListener` of @hono/node-server, as docs/inbox.md shows.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createInboxServer, type InboxServer } from '../../src/inbox/index.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { Worker } from '../../src/worker/index.js';
import { deskAgent, type Ledger, pausedRun, TOKENS } from './fixture.js';
import { call } from './support.js';

let store: MemoryStore;
let ledger: Ledger;
let desk: ReturnType<typeof deskAgent>;
let inbox: InboxServer;

beforeEach(async () => {
  store = new MemoryStore();
  ledger = [];
  desk = deskAgent(ledger);
  await pausedRun(store, desk, 'r-1', 'refund A-1 500');
  inbox = createInboxServer({ store, auth: { users: TOKENS }, agents: [desk], pollMs: 50 });
});

afterEach(async () => {
  await inbox.close();
});

describe('embedding the inbox', () => {
  it('answers requests through inbox.fetch, without listening', async () => {
    const auth = { authorization: `Bearer ${TOKENS.dana}` };
    expect((await inbox.fetch(new Request('http://inbox.internal/api/runs'))).status).toBe(401);
    const listed = await inbox.fetch(new Request('http://inbox.internal/api/runs', { headers: auth }));
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { runs: { runId: string }[] }).runs.map((r) => r.runId)).toEqual(['r-1']);
    const page = await inbox.fetch(new Request('http://inbox.internal/'));
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    expect(inbox.url).toBeNull();
  });

  it('serves its page and API inside a plain node:http server, next to the server’s own routes', async () => {
    const inboxListener = getRequestListener(inbox.fetch);
    const server: Server = createServer((req, res) => {
      if (req.url === '/healthz') return void res.end('ok');
      void inboxListener(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      expect(await (await fetch(`${url}/healthz`)).text()).toBe('ok');
      const page = await fetch(`${url}/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toMatch(/<script type="module" src="\/inbox\.js">/);
      expect((await call(url, 'GET', '/api/runs')).status).toBe(401);
      const [pending] = (await store.load('r-1'))!.pendingCalls;
      const decided = await call(url, 'POST', '/api/runs/r-1/decisions', {
        token: TOKENS.dana,
        body: { decisions: { [pending!.id]: { approve: true, note: 'ok' } } },
      });
      expect(decided.status).toBe(201);
      expect(decided.body.recorded.by).toBe('dana');
      expect(ledger).toEqual([]); // recorded, not run
      await new Worker({ store, agents: [desk] }).drain();
      expect(ledger).toEqual(['r-1:1 refund {"order":"A-1","cents":500,"memo":"refund A-1 500"}']);

      // The event stream too, until the inbox closes (the application's server stays up).
      const events = await fetch(`${url}/api/events`, { headers: { authorization: `Bearer ${TOKENS.dana}` } });
      expect(events.headers.get('content-type')).toMatch(/text\/event-stream/);
      const reader = events.body!.pipeThrough(new TextDecoderStream()).getReader();
      let seen = '';
      while (!seen.includes('event: hello')) seen += (await reader.read()).value ?? '';
      await inbox.close();
      while (!(await reader.read()).done) {
        // drains what was left; the inbox's close ends the stream
      }
      expect(await (await fetch(`${url}/healthz`)).text()).toBe('ok');
    } finally {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    }
  });
});
