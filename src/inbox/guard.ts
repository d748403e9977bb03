/**
 * The inbox's front door, as Hono middleware: security headers on every answer, a bound on
 * request bodies, authentication of every API request, and CSRF checks on every request that
 * can change something.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { getCookie } from 'hono/cookie';
import { type Authenticator, bearerToken, type Identity } from './auth.js';
import { HttpError } from './http-errors.js';
import { CSRF_HEADER, SESSION_COOKIE, type Sessions } from './sessions.js';

/** What the middleware puts on the context. */
export type InboxEnv = { Variables: { identity: Identity } };

/**
 * No inline script or style, nothing from another origin, no frames, no plugins: the page's
 * script and style are files of its own origin, and model or tool output can only ever be text.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Security headers on every answer; API answers are never cached. */
export const securityHeaders: MiddlewareHandler = async (c, next) => {
  await next();
  c.header('Content-Security-Policy', CONTENT_SECURITY_POLICY);
  c.header('X-Content-Type-Options', 'nosniff');
  c.header('X-Frame-Options', 'DENY');
  c.header('Referrer-Policy', 'no-referrer');
  c.header('Cross-Origin-Opener-Policy', 'same-origin');
  c.header('Cross-Origin-Resource-Policy', 'same-origin');
  if (c.req.path.startsWith('/api/')) c.header('Cache-Control', 'no-store');
};

/**
 * Refuses a body over `maxBytes` with 413 before any of it is read, by its `Content-Length`
 * (Node's server then delivers exactly that many bytes). A body of unannounced length (chunked)
 * gets 411: browsers and fetch always announce theirs.
 */
export function limitBody(maxBytes: number): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.header('transfer-encoding') !== undefined) {
      throw new HttpError(411, 'bad_request', 'send the body with a Content-Length');
    }
    const length = Number(c.req.header('content-length') ?? 0);
    if (!(length <= maxBytes)) throw new HttpError(413, 'too_large', `the request body is over ${maxBytes} bytes`);
    await next();
  };
}

/**
 * Sets `identity` or answers 401: a bearer token (a wrong one is refused, never passed over for
 * a cookie), else the trusted proxy's header (proxy mode), else the session cookie.
 */
export function authenticate(auth: Authenticator, sessions: Sessions): MiddlewareHandler<InboxEnv> {
  return async (c, next) => {
    const header = c.req.header('authorization');
    let identity: Identity | null = null;
    if (header !== undefined) {
      const token = bearerToken(header);
      const user = token === null ? null : auth.userOfToken(token);
      if (user === null) throw unauthenticated('the bearer token is not valid');
      identity = { user, via: 'bearer' };
    } else if (auth.mode === 'proxy') {
      const user = auth.userOfProxy(c.req.header(auth.proxyHeader as string));
      if (user !== null) identity = { user, via: 'proxy' };
    } else {
      const id = getCookie(c, SESSION_COOKIE);
      const user = sessions.userOf(id);
      if (user !== null && id !== undefined) identity = { user, via: 'session', session: id };
    }
    if (identity === null) throw unauthenticated('authentication required');
    c.set('identity', identity);
    await next();
  };
}

function unauthenticated(message: string): HttpError {
  return new HttpError(401, 'unauthenticated', message);
}

/** The CSRF subject of an identity the browser sends on its own (a cookie, a proxy's login). */
export function csrfSubject(identity: Identity): string | null {
  if (identity.via === 'session') return `session:${identity.session}`;
  if (identity.via === 'proxy') return `proxy:${identity.user}`;
  return null; // a bearer token is never sent by the browser on its own: no CSRF to fear
}

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * On every state-changing request: the `Origin` (when sent) must be the inbox's own (or one of
 * `origins`), `Sec-Fetch-Site` (when sent) must not be cross-site, and a request authenticated
 * by cookie or proxy must carry its CSRF token in `X-Tollgate-CSRF`. Answers 403 otherwise.
 */
export function checkCsrf(sessions: Sessions, origins: readonly string[] | null): MiddlewareHandler<InboxEnv> {
  return async (c, next) => {
    if (!SAFE.has(c.req.method)) {
      const own = new URL(c.req.url).origin;
      const origin = c.req.header('origin');
      if (origin !== undefined && origin !== own && !origins?.includes(origin)) {
        throw forbidden(`cross-origin request from ${origin} refused`);
      }
      const site = c.req.header('sec-fetch-site');
      if (site !== undefined && site !== 'same-origin' && site !== 'none' && !(origins && site === 'same-site')) {
        throw forbidden(`a ${site} request cannot change anything`);
      }
      const subject = csrfSubject(c.get('identity'));
      if (subject !== null && !sessions.checkCsrf(subject, c.req.header(CSRF_HEADER))) {
        throw forbidden('missing or wrong X-Tollgate-CSRF header (GET /api/session gives the token)');
      }
    }
    await next();
  };
}

function forbidden(message: string): HttpError {
  return new HttpError(403, 'forbidden', message);
}

/** The host a request is addressed to, lower case: its `Host` header, else its URL's. */
export function hostOf(c: Context): string {
  return (c.req.header('host') ?? new URL(c.req.url).host).toLowerCase();
}

/**
 * Whether `host` (`name` or `name:port`) names this machine's loopback interface (`localhost`,
 * `127.0.0.1`, `[::1]`), on any port: a DNS name an attacker controls is never one of them.
 */
export function isLoopbackHost(host: string): boolean {
  return /^(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/.test(host);
}

/**
 * With a proxy's header as the identity, only requests addressed (the `Host` header) to a known
 * host are answered; others get 403. Without this, a web page whose DNS name an attacker points
 * at 127.0.0.1 (DNS rebinding) could reach the inbox from a browser on the same machine as a
 * same-origin page, and set the header itself. Known: the loopback names (`localhost`,
 * `127.0.0.1`, `[::1]`, on any port) and `hosts()` (the hosts of `origins`, and the address the
 * inbox listens on; read per request, since the port is known once it listens). This holds
 * however the inbox is mounted: its own `listen`, or `fetch` in another server.
 *
 * The token modes need no such check: a bearer token is only ever sent by who was given it, and
 * the session cookie by the browser to the host name it was set for, so a rebound name carries
 * no credential (and the CSRF checks still apply to every mode).
 */
export function checkHost(auth: Authenticator, hosts: () => readonly string[]): MiddlewareHandler {
  return async (c, next) => {
    if (auth.mode === 'proxy') {
      const host = hostOf(c);
      if (!isLoopbackHost(host) && !hosts().includes(host)) {
        throw forbidden(`requests to host ${JSON.stringify(host)} are refused: add its origin to origins`);
      }
    }
    await next();
  };
}

/** Whether the request came over HTTPS (directly, or through a proxy that says so). */
export function isHttps(c: Context): boolean {
  return new URL(c.req.url).protocol === 'https:' || c.req.header('x-forwarded-proto') === 'https';
}
