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

/** How many sessions the table holds. */
export interface SessionLimits {
  /** Live sessions per user; a user's next sign-in ends their oldest. @default 32 */
  perUser?: number;
  /** Live sessions in all; past it, the user holding the most loses their oldest. @default 10_000 */
  total?: number;
}

/**
 * In-memory sessions (a restart logs everyone out), bounded in age, per user and in all. One
 * approver signing in over and over only ever ends their own oldest sessions, never another's.
 */
export class Sessions {
  readonly #sessions = new Map<string, Session>();
  /** Each user's session ids, oldest (least recently opened or renewed) first. */
  readonly #byUser = new Map<string, Set<string>>();
  /** Signs CSRF tokens; new at every start. */
  readonly #secret = randomBytes(32);
  readonly #ttlMs: number;
  readonly #perUser: number;
  readonly #total: number;
  readonly #now: () => number;

  constructor(ttlMs: number, now: () => number, { perUser = 32, total = 10_000 }: SessionLimits = {}) {
    this.#ttlMs = ttlMs;
    this.#now = now;
    this.#perUser = Math.max(1, perUser);
    this.#total = Math.max(total, this.#perUser);
  }

  /** How many sessions are held (live or not yet swept). */
  get size(): number {
    return this.#sessions.size;
  }

  /** Opens a session for `user`; returns its id (the cookie's value). */
  open(user: string): string {
    const id = randomBytes(32).toString('base64url');
    const own = this.#byUser.get(user);
    if (own && own.size >= this.#perUser) this.#sweep(own);
    while (own && own.size >= this.#perUser) this.#dropOldest(own);
    if (this.#sessions.size >= this.#total) {
      for (const ids of [...this.#byUser.values()]) this.#sweep(ids);
      while (this.#sessions.size >= this.#total) {
        // The user holding the most gives up their oldest: never someone under their share.
        let most: Set<string> | undefined;
        for (const ids of this.#byUser.values()) if (!most || ids.size > most.size) most = ids;
        if (!most) break;
        this.#dropOldest(most);
      }
    }
    this.#sessions.set(id, { user, expiresAt: this.#now() + this.#ttlMs });
    this.#idsOf(user).add(id);
    return id;
  }

  /** The user of a live session, or null. */
  userOf(id: string | undefined): string | null {
    if (id === undefined) return null;
    const session = this.#sessions.get(id);
    if (!session) return null;
    if (session.expiresAt <= this.#now()) {
      this.close(id);
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
    // Renewed, it is now the user's newest: the last of theirs to go.
    const ids = this.#idsOf(user);
    ids.delete(id as string);
    ids.add(id as string);
    return true;
  }

  close(id: string): void {
    const session = this.#sessions.get(id);
    if (!session) return;
    this.#sessions.delete(id);
    const ids = this.#byUser.get(session.user);
    ids?.delete(id);
    if (ids?.size === 0) this.#byUser.delete(session.user);
  }

  #idsOf(user: string): Set<string> {
    let ids = this.#byUser.get(user);
    if (!ids) {
      ids = new Set();
      this.#byUser.set(user, ids);
    }
    return ids;
  }

  /** Ends the expired sessions among `ids`. */
  #sweep(ids: Set<string>): void {
    const now = this.#now();
    for (const id of [...ids]) if ((this.#sessions.get(id)?.expiresAt ?? 0) <= now) this.close(id);
  }

  #dropOldest(ids: Set<string>): void {
    const oldest = ids.values().next().value;
    if (oldest !== undefined) this.close(oldest);
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
