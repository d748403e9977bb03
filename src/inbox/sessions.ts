/**
 * The page's sessions and CSRF tokens. The page trades a bearer token for a session once
 * (`POST /api/session`); the session lives in an HttpOnly, SameSite=Strict cookie that script
 * cannot read, so the token is not kept in the browser. A cookie is sent by the browser on its
 * own, so every state-changing request made with one must also carry the session's CSRF token
 * in the `X-Tollgate-CSRF` header: another site can neither read that token nor set a custom
 * header on a cross-site request without a CORS preflight, which the inbox never grants.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** The session cookie's name. */
export const SESSION_COOKIE = 'tollgate_inbox';
/** The header that carries the CSRF token. */
export const CSRF_HEADER = 'x-tollgate-csrf';

interface Session {
  user: string;
  expiresAt: number;
}

/** In-memory sessions (a restart logs everyone out), bounded in number and age. */
export class Sessions {
  readonly #sessions = new Map<string, Session>();
  /** Signs CSRF tokens; new at every start. */
  readonly #secret = randomBytes(32);
  readonly #ttlMs: number;
  readonly #max: number;
  readonly #now: () => number;

  constructor(ttlMs: number, now: () => number, max = 10_000) {
    this.#ttlMs = ttlMs;
    this.#now = now;
    this.#max = max;
  }

  /** Opens a session for `user`; returns its id (the cookie's value). */
  open(user: string): string {
    const id = randomBytes(32).toString('base64url');
    if (this.#sessions.size >= this.#max) {
      // The oldest goes first (a Map keeps insertion order).
      const oldest = this.#sessions.keys().next().value;
      if (oldest !== undefined) this.#sessions.delete(oldest);
    }
    this.#sessions.set(id, { user, expiresAt: this.#now() + this.#ttlMs });
    return id;
  }

  /** The user of a live session, or null. */
  userOf(id: string | undefined): string | null {
    if (id === undefined) return null;
    const session = this.#sessions.get(id);
    if (!session) return null;
    if (session.expiresAt <= this.#now()) {
      this.#sessions.delete(id);
      return null;
    }
    return session.user;
  }

  /**
   * Keeps `id` for another sign-in of the same user (a second tab opened with the sign-in link):
   * its expiry moves on, and the pages already holding its CSRF token keep working. False (and
   * nothing kept) for a session that is not live or is another user's.
   */
  reuse(id: string | undefined, user: string): boolean {
    const session = id === undefined || this.userOf(id) !== user ? undefined : this.#sessions.get(id);
    if (session === undefined) return false;
    session.expiresAt = this.#now() + this.#ttlMs;
    return true;
  }

  close(id: string): void {
    this.#sessions.delete(id);
  }

  /**
   * The CSRF token of a session (`session:<id>`) or of a proxy-authenticated user
   * (`proxy:<user>`): an HMAC under the server's secret, so it need not be stored.
   */
  csrfToken(subject: string): string {
    return createHmac('sha256', this.#secret).update(subject, 'utf8').digest('base64url');
  }

  /** Whether `given` is `subject`'s CSRF token, compared in constant time. */
  checkCsrf(subject: string, given: string | undefined): boolean {
    if (given === undefined) return false;
    const expected = Buffer.from(this.csrfToken(subject));
    const actual = Buffer.from(given);
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  }
}
