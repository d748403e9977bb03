/**
 * `createInboxServer`: the approval inbox, a JSON API and a web page on one Hono app, served by
 * Node's HTTP server. It records decisions in the store and never runs a tool: a worker applies
 * what it records (docs/workers.md).
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import { z } from 'zod';
import type { Clock } from '../clock.js';
import type { AgentDefinition } from '../define.js';
import { OptionsError } from '../errors.js';
import { checkedApart, checkOptions, fn, must, type OptionShape } from '../option-schema.js';
import type { CheckpointStore } from '../store/contract.js';
import { checkQueueStore, definitionsByName } from '../worker/checks.js';
import { apiRoutes } from './api.js';
import { Authenticator, type InboxAuth } from './auth.js';
import { RunFeed } from './feed.js';
import { authenticate, checkCsrf, checkHost, type InboxEnv, limitBody, securityHeaders } from './guard.js';
import { errorAnswer } from './http-errors.js';
import { readPage, servePage } from './page.js';
import { Sessions } from './sessions.js';

/** Options of `createInboxServer`. */
export interface InboxOptions {
  /** The store the runs live in; it needs the approval queue (`queueDecision`, `claimNext`). */
  store: CheckpointStore;
  /** How approvers authenticate (docs/inbox.md): `{ token, user? }`, `{ users }` or `{ proxyHeader }`. */
  auth: InboxAuth;
  /**
   * The agents whose runs the inbox shows, as `defineAgent` makes them: with a run's definition,
   * the page shows its tools' schemas and edited arguments are checked against them. Runs of
   * other agents are shown and can be approved or denied as they are, not edited. @default []
   */
  agents?: readonly AgentDefinition<any>[];
  /** The largest request body accepted, in bytes; larger ones get 413. @default 65_536 */
  maxBodyBytes?: number;
  /** How often the change feed reads the store while a page listens, in ms. @default 1_000 */
  pollMs?: number;
  /** How long a page's login lasts, in ms. @default 8 hours */
  sessionTtlMs?: number;
  /**
   * Other origins whose pages may send state-changing requests (`https://approvals.example.com`
   * when a proxy serves the inbox under another name). With `auth: { proxyHeader }`, their hosts
   * are also the only names (with the loopback names `localhost`, `127.0.0.1`, `[::1]` and the
   * address it listens on) that requests may be addressed to, against DNS rebinding, whether
   * the inbox listens itself or is mounted through `fetch`. @default only the inbox's own origin
   */
  origins?: readonly string[];
  /** The clock decisions are checked and recorded by. @default each run's definition's clock, else the system clock */
  clock?: Clock;
}

/** Where `listen` listens. */
export interface ListenOptions {
  /** 0 picks a free port. @default 8470 */
  port?: number;
  /** @default '127.0.0.1' (this machine only) */
  host?: string;
}

/** A made inbox: listen on a port of its own, or mount `fetch` in another server. */
export interface InboxServer {
  /** Answers one request (the Fetch API): to mount the inbox in an existing Hono or Fetch server. */
  fetch(request: Request): Promise<Response>;
  /**
   * Starts a Node HTTP server for the inbox.
   * @returns its URL, e.g. `http://127.0.0.1:8470`.
   */
  listen(options?: ListenOptions): Promise<string>;
  /** The URL it listens on, or null before `listen`. */
  readonly url: string | null;
  /** Stops listening, ends the event streams, and stops reading the store; for good. The store stays open. */
  close(): Promise<void>;
}

const whole = (max: number) =>
  must(`a whole number from 1 to ${max}`, (e) => z.number(e).int(e).min(1, e).max(max, e)).optional();

const inboxShape = {
  // Checked apart: the store (its queue's methods), auth and agents by their own checks.
  store: checkedApart,
  auth: checkedApart,
  agents: checkedApart,
  maxBodyBytes: whole(16 * 1024 * 1024),
  pollMs: whole(2 ** 31 - 1),
  sessionTtlMs: whole(2 ** 31 - 1),
  origins: z
    .array(
      z.custom<string>((o) => typeof o === 'string' && URL.canParse(o), {
        error: 'an origin such as https://inbox.example.com',
      }),
      { error: 'a list of origins such as https://inbox.example.com' },
    )
    .optional(),
  clock: z.looseObject({ now: fn }, { error: 'an object with now()' }).optional(),
} satisfies OptionShape<InboxOptions>;

/**
 * Makes the approval inbox for a store. Nothing listens until `listen()`.
 * @throws OptionsError on bad options.
 *
 * @example
 * const inbox = createInboxServer({ store, auth: { users: { dana: process.env.DANA_TOKEN! } }, agents: [support] });
 * const url = await inbox.listen({ port: 8470 });
 */
export function createInboxServer(options: InboxOptions): InboxServer {
  const call = 'createInboxServer';
  checkOptions(call, options, inboxShape);
  checkQueueStore(call, options.store);
  const auth = new Authenticator(options.auth, call);
  const agents = options.agents?.length ? definitionsByName(call, options.agents) : new Map();
  const { maxBodyBytes = 65_536, pollMs = 1_000, sessionTtlMs = 8 * 3600 * 1000, clock } = options;
  // As browsers send them: scheme, host and port only (`https://x.example/` → `https://x.example`).
  const origins = options.origins?.map((o) => new URL(o).origin) ?? null;
  const now = () => (clock ?? { now: Date.now }).now();
  const sessions = new Sessions(sessionTtlMs, now);
  const feed = new RunFeed(options.store, pollMs);
  const closing = new AbortController();

  const app = new Hono<InboxEnv>();
  app.onError((error, c) => {
    const { status, body } = errorAnswer(error);
    if (status >= 500) console.error(`tollgate inbox: ${c.req.method} ${c.req.path}:`, error);
    return c.json(body, status as 400);
  });
  app.use('*', securityHeaders);
  // A damaged run left out of a listing is logged once per version, not at every poll of a page.
  const damagedLogged = new Set<string>();
  const logDamaged = (runId: string, version: number, error: unknown) => {
    const key = `${version}:${runId}`;
    if (damagedLogged.has(key)) return;
    if (damagedLogged.size >= 1_000) damagedLogged.clear();
    damagedLogged.add(key);
    console.error(
      `tollgate inbox: run ${JSON.stringify(runId)} left out of the list, its stored state could not be read:`,
      error,
    );
  };
  let server: Server | null = null;
  let url: string | null = null;
  // The hosts a proxy-authenticated request may be addressed to, besides the loopback names
  // (guard.ts, checkHost): those of `origins`, and the address the inbox listens on.
  const hosts = () => {
    const names = (origins ?? []).map((o) => new URL(o).host.toLowerCase());
    if (url) names.push(new URL(url).host);
    return names;
  };
  app.use(
    '/api/*',
    checkHost(auth, hosts),
    authenticate(auth, sessions),
    limitBody(maxBodyBytes),
    checkCsrf(sessions, origins),
  );
  app.route(
    '/api',
    apiRoutes({
      store: options.store,
      sessions,
      feed,
      agents,
      clock,
      now,
      sessionTtlMs,
      heartbeatMs: 15_000,
      closing: closing.signal,
      onDamaged: logDamaged,
    }),
  );
  servePage(app, readPage());
  app.notFound((c) => c.json({ error: { code: 'not_found', message: `no route ${c.req.method} ${c.req.path}` } }, 404));

  const fetch = (request: Request) => Promise.resolve(app.fetch(request));

  return {
    fetch,
    get url() {
      return url;
    },
    async listen({ port = 8470, host = '127.0.0.1' }: ListenOptions = {}) {
      if (server) throw new OptionsError(`${call}: listen: already listening on ${url}`);
      if (closing.signal.aborted) throw new OptionsError(`${call}: listen: this inbox was closed; make a new one`);
      const { createServer } = await import('node:http');
      // overrideGlobalObjects: false — an embedding application's own Request/Response stay its own.
      const listener = getRequestListener(fetch, { overrideGlobalObjects: false });
      const made = createServer((req, res) => void listener(req, res));
      server = made;
      await new Promise<void>((resolve, reject) => {
        made.once('error', reject);
        made.listen(port, host, () => {
          made.off('error', reject);
          resolve();
        });
      });
      const address = made.address() as AddressInfo;
      const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      url = `http://${shown}:${address.port}`;
      return url;
    },
    async close() {
      closing.abort();
      feed.close();
      const made = server;
      server = null;
      url = null;
      if (!made) return;
      await new Promise<void>((resolve) => {
        made.close(() => resolve());
        made.closeIdleConnections();
      });
    },
  };
}
