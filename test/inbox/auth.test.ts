/**
 * The inbox's door, over real HTTP on loopback: authentication (tokens, sessions, a proxy's
 * header), CSRF on every state-changing request, the security headers, and the options check.
 */
import { request } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OptionsError } from '../../src/errors.js';
import { createInboxServer, type InboxServer } from '../../src/inbox/index.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { deskAgent, pausedRun, TOKENS } from './fixture.js';
import { call, startInbox } from './support.js';

let store: MemoryStore;
let inbox: InboxServer;
let url: string;
let callId: string;

beforeEach(async () => {
  store = new MemoryStore();
  await pausedRun(store, deskAgent([]), 'r1', 'refund A-1 500');
  callId = (await store.load('r1'))!.pendingCalls[0]!.id;
  ({ inbox, url } = await startInbox({ store, auth: { users: TOKENS } }));
});

afterEach(async () => {
  await inbox.close();
});

const decisionBody = () => ({ decisions: { [callId]: { approve: true } } });
const unchanged = async () => expect((await store.load('r1'))?.decision).toBeNull();

describe('authentication', () => {
  const routes: [string, string][] = [
    ['GET', '/api/session'],
    ['POST', '/api/session'],
    ['DELETE', '/api/session'],
    ['GET', '/api/runs'],
    ['GET', '/api/runs/r1'],
    ['POST', '/api/runs/r1/decisions'],
    ['POST', '/api/runs/r1/calls/x/check'],
    ['GET', '/api/events'],
  ];

  it('answers 401 to every API route without credentials, or with a wrong token, and changes nothing', async () => {
    for (const [method, path] of routes) {
      const body = method === 'POST' ? decisionBody() : undefined;
      const none = await call(url, method, path, { body });
      expect(none.status, `${method} ${path}`).toBe(401);
      expect(none.body.error.code).toBe('unauthenticated');
      expect(none.headers.get('content-security-policy')).toContain("default-src 'none'"); // on refusals too
      expect(none.headers.get('cache-control')).toBe('no-store');
      const wrong = await call(url, method, path, { body, token: `${TOKENS.dana}x` });
      expect(wrong.status, `${method} ${path} (wrong token)`).toBe(401);
      const basic = await call(url, method, path, { body, headers: { authorization: 'Basic ZGFuYTp4' } });
      expect(basic.status, `${method} ${path} (basic)`).toBe(401);
    }
    await unchanged();
  });

  it('serves the page without credentials (it holds no data), with a strict CSP', async () => {
    const page = await call(url, 'GET', '/');
    expect(page.status).toBe(200);
    expect(page.body).toContain('<script type="module" src="/inbox.js"></script>');
    expect(page.body).not.toMatch(/<script>|<script [^>]*>[^<]/); // no inline script
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    for (const file of ['/inbox.js', '/card.js', '/render.js', '/inbox.css']) {
      expect((await call(url, 'GET', file)).status, file).toBe(200);
    }
    // The page's scripts never parse text as HTML.
    for (const file of ['/inbox.js', '/card.js', '/render.js']) {
      expect((await call(url, 'GET', file)).body).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
    }
  });
});

describe('sessions and CSRF', () => {
  async function login() {
    const answer = await call(url, 'POST', '/api/session', { token: TOKENS.lee });
    expect(answer.status).toBe(200);
    const cookie = answer.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Strict/i);
    return { cookie: cookie.split(';')[0] as string, csrf: answer.body.csrf as string };
  }

  it('trades a token for a cookie session; a state change with the cookie needs the CSRF token', async () => {
    const { cookie, csrf } = await login();
    const session = await call(url, 'GET', '/api/session', { headers: { cookie } });
    expect(session.body).toEqual({ user: 'lee', via: 'session', csrf });
    const path = '/api/runs/r1/decisions';
    expect((await call(url, 'POST', path, { headers: { cookie }, body: decisionBody() })).status).toBe(403);
    const wrong = { cookie, 'x-tollgate-csrf': `${csrf.slice(1)}A` };
    expect((await call(url, 'POST', path, { headers: wrong, body: decisionBody() })).status).toBe(403);
    const crossOrigin = { cookie, 'x-tollgate-csrf': csrf, origin: 'https://evil.example' };
    expect((await call(url, 'POST', path, { headers: crossOrigin, body: decisionBody() })).status).toBe(403);
    const crossSite = { cookie, 'x-tollgate-csrf': csrf, 'sec-fetch-site': 'cross-site' };
    expect((await call(url, 'POST', path, { headers: crossSite, body: decisionBody() })).status).toBe(403);
    await unchanged();
    const good = { cookie, 'x-tollgate-csrf': csrf, origin: url, 'sec-fetch-site': 'same-origin' };
    const answer = await call(url, 'POST', path, { headers: good, body: decisionBody() });
    expect(answer.status).toBe(201);
    expect((await store.load('r1'))?.decision?.by).toBe('lee');
  });

  it('a second sign-in in the same browser keeps its session, so the first tab’s CSRF token still works', async () => {
    const first = await login();
    const again = await call(url, 'POST', '/api/session', { token: TOKENS.lee, headers: { cookie: first.cookie } });
    expect(again.status).toBe(200);
    expect(again.body.csrf).toBe(first.csrf);
    expect((again.headers.get('set-cookie') ?? '').split(';')[0]).toBe(first.cookie);
    const good = { cookie: first.cookie, 'x-tollgate-csrf': first.csrf, origin: url, 'sec-fetch-site': 'same-origin' };
    const answer = await call(url, 'POST', '/api/runs/r1/decisions', { headers: good, body: decisionBody() });
    expect(answer.status).toBe(201);
    // Another user signing in in that browser gets a session of their own; the old token is no good with it.
    const dana = await call(url, 'POST', '/api/session', { token: TOKENS.dana, headers: { cookie: first.cookie } });
    const danaCookie = (dana.headers.get('set-cookie') ?? '').split(';')[0] as string;
    expect(danaCookie).not.toBe(first.cookie);
    expect(dana.body.csrf).not.toBe(first.csrf);
    expect((await call(url, 'GET', '/api/session', { headers: { cookie: danaCookie } })).body.user).toBe('dana');
  });

  it('signs out: the cookie no longer works', async () => {
    const { cookie, csrf } = await login();
    expect((await call(url, 'DELETE', '/api/session', { headers: { cookie } })).status).toBe(403); // CSRF
    expect((await call(url, 'DELETE', '/api/session', { headers: { cookie, 'x-tollgate-csrf': csrf } })).status).toBe(
      200,
    );
    expect((await call(url, 'GET', '/api/runs', { headers: { cookie } })).status).toBe(401);
  });

  it('refuses a cross-origin request even with a bearer token', async () => {
    const headers = { origin: 'https://evil.example' };
    const answer = await call(url, 'POST', '/api/runs/r1/decisions', {
      token: TOKENS.dana,
      headers,
      body: decisionBody(),
    });
    expect(answer.status).toBe(403);
    await unchanged();
  });
});

describe('a trusted reverse proxy', () => {
  beforeEach(async () => {
    await inbox.close();
    ({ inbox, url } = await startInbox({ store, auth: { proxyHeader: 'X-Forwarded-User' } }));
  });

  it('takes the user from the header; without it, 401; a state change needs the CSRF token', async () => {
    expect((await call(url, 'GET', '/api/runs')).status).toBe(401);
    expect((await call(url, 'GET', '/api/runs', { token: TOKENS.dana })).status).toBe(401);
    const headers = { 'x-forwarded-user': 'kim@example.com' };
    const session = await call(url, 'GET', '/api/session', { headers });
    expect(session.body).toMatchObject({ user: 'kim@example.com', via: 'proxy' });
    const path = '/api/runs/r1/decisions';
    expect((await call(url, 'POST', path, { headers, body: decisionBody() })).status).toBe(403);
    await unchanged();
    const withToken = { ...headers, 'x-tollgate-csrf': session.body.csrf };
    expect((await call(url, 'POST', path, { headers: withToken, body: decisionBody() })).status).toBe(201);
    expect((await store.load('r1'))?.decision?.by).toBe('kim@example.com');
  });
});

describe('a trusted reverse proxy, reached under another name', () => {
  it('refuses a request addressed to an unknown host (DNS rebinding), unless its origin is allowed', async () => {
    const asHost = (base: string, host: string) =>
      new Promise<number>((resolve, reject) => {
        const { port } = new URL(base);
        const headers = { host, 'x-forwarded-user': 'kim' };
        request({ host: '127.0.0.1', port, path: '/api/runs', headers }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        })
          .on('error', reject)
          .end();
      });
    await inbox.close();
    ({ inbox, url } = await startInbox({ store, auth: { proxyHeader: 'X-Forwarded-User' } }));
    expect(await asHost(url, new URL(url).host)).toBe(200);
    expect(await asHost(url, `localhost:${new URL(url).port}`)).toBe(200);
    expect(await asHost(url, `evil.example:${new URL(url).port}`)).toBe(403);
    await inbox.close();
    const origins = ['https://approvals.example.com'];
    ({ inbox, url } = await startInbox({ store, auth: { proxyHeader: 'X-Forwarded-User' }, origins }));
    expect(await asHost(url, 'approvals.example.com')).toBe(200);
    expect(await asHost(url, 'evil.example')).toBe(403);
  });
});

describe('options', () => {
  it('refuses weak or ambiguous settings with OptionsError', () => {
    const bad = [
      { store, auth: { token: 'short' } },
      { store, auth: { users: { a: TOKENS.dana, b: TOKENS.dana } } },
      { store, auth: { users: {} } },
      { store, auth: { proxyHeader: 'Authorization' } },
      { store, auth: { token: TOKENS.dana, extra: 1 } },
      { store, auth: { token: TOKENS.dana }, maxBodyBytes: 0 },
      { store, auth: { token: TOKENS.dana }, agents: [{}] },
      { store: {}, auth: { token: TOKENS.dana } },
      { store, auth: { token: TOKENS.dana }, port: 80 },
    ];
    for (const options of bad) {
      expect(() => createInboxServer(options as never), JSON.stringify(options.auth)).toThrow(OptionsError);
    }
  });

  it('names a single-token approver by `user`', async () => {
    await inbox.close();
    ({ inbox, url } = await startInbox({ store, auth: { token: TOKENS.dana, user: 'ops' } }));
    expect((await call(url, 'GET', '/api/session', { token: TOKENS.dana })).body.user).toBe('ops');
  });
});
