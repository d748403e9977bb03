/**
 * Who is asking: the inbox's authentication. Three ways, one per deployment:
 * - a token (one approver) or a list of users with tokens, sent as `Authorization: Bearer`;
 *   the page trades the token once for a session cookie (sessions.ts);
 * - a trusted header set by a reverse proxy that authenticated the user itself.
 * The approver's identity always comes from here, never from a request body.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { OptionsError } from '../errors.js';
import { isPlainObject } from '../json.js';
import { checkKeys, showValue } from '../option-keys.js';

/**
 * How the inbox authenticates requests.
 * - `{ token, user? }`: one approver; `user` names them in decisions. @default user 'approver'
 * - `{ users }`: user name → token; each approver has their own token.
 * - `{ proxyHeader }`: a reverse proxy in front of the inbox authenticates users and sets this
 *   header (e.g. `X-Forwarded-User`) to the user's name. Only safe when nothing but the proxy
 *   can reach the inbox (bind it to 127.0.0.1), and the proxy overwrites the header.
 */
export type InboxAuth = { token: string; user?: string } | { users: Record<string, string> } | { proxyHeader: string };

/** Tokens shorter than this are refused: a token is the whole secret. */
export const MIN_TOKEN_LENGTH = 16;
const MAX_NAME = 256;

/** A request's authenticated identity, and how it was proven. */
export interface Identity {
  user: string;
  via: 'bearer' | 'proxy' | 'session';
  /** The session's id, when `via` is `'session'`. */
  session?: string;
}

/** True when `text` holds a control character (C0 or DEL): no name may. */
const hasControl = (text: string) => [...text].some((ch) => (ch.codePointAt(0) as number) < 0x20 || ch === '\x7f');

/**
 * What a value is, never what it holds: the settings carry secrets (a token given where a name or
 * an object was expected must not be printed in an error).
 */
const kindOf = (value: unknown) =>
  value === null
    ? 'null'
    : Array.isArray(value)
      ? 'an array'
      : typeof value === 'object'
        ? 'an object'
        : `a ${typeof value}`;

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** Checks a user name: what a decision records as `by`. */
function checkName(call: string, what: string, name: unknown): string {
  if (typeof name !== 'string' || name.trim() === '' || name.length > MAX_NAME || hasControl(name)) {
    throw new OptionsError(
      `${call}: ${what} must be a non-empty name of at most ${MAX_NAME} characters without control characters, got ${kindOf(name)}${typeof name === 'string' ? ` of ${name.length} characters` : ''}`,
    );
  }
  return name;
}

function checkToken(call: string, what: string, token: unknown): string {
  if (typeof token !== 'string' || token.length < MIN_TOKEN_LENGTH || /\s/.test(token)) {
    throw new OptionsError(
      `${call}: ${what} must be a string of at least ${MIN_TOKEN_LENGTH} characters without spaces (a random secret)`,
    );
  }
  return token;
}

/** The checked authentication settings, able to tell who a request comes from. */
export class Authenticator {
  readonly mode: 'tokens' | 'proxy';
  /** The proxy's header, lower case (proxy mode). */
  readonly proxyHeader: string | null;
  readonly #users: { user: string; hash: Buffer }[];

  /** @throws OptionsError on bad settings (short tokens, a token given twice, …). */
  constructor(auth: unknown, call = 'createInboxServer') {
    if (!isPlainObject(auth)) {
      throw new OptionsError(
        `${call}: auth must be { token }, { users } or { proxyHeader } (see docs/inbox.md), got ${kindOf(auth)}`,
      );
    }
    if ('proxyHeader' in auth) {
      checkKeys(`${call}: auth`, auth, ['proxyHeader']);
      const header = auth.proxyHeader;
      if (
        typeof header !== 'string' ||
        !/^[A-Za-z0-9-]{1,64}$/.test(header) ||
        /^(authorization|cookie)$/i.test(header)
      ) {
        throw new OptionsError(
          `${call}: auth.proxyHeader must be a header name such as X-Forwarded-User, got ${showValue(header)}`,
        );
      }
      this.mode = 'proxy';
      this.proxyHeader = header.toLowerCase();
      this.#users = [];
      return;
    }
    this.mode = 'tokens';
    this.proxyHeader = null;
    let pairs: [string, string][];
    if ('users' in auth) {
      checkKeys(`${call}: auth`, auth, ['users']);
      if (!isPlainObject(auth.users) || Object.keys(auth.users).length === 0) {
        throw new OptionsError(
          `${call}: auth.users must map each user's name to a token, got ${isPlainObject(auth.users) ? 'an empty object' : kindOf(auth.users)}`,
        );
      }
      const count = Object.keys(auth.users).length;
      // Users by position, not by name: a map written the wrong way round has tokens for names.
      pairs = Object.entries(auth.users).map(([name, token], i) => [
        checkName(call, `the name of user ${i + 1} of ${count} in auth.users`, name),
        checkToken(call, `the token of user ${i + 1} of ${count} in auth.users`, token),
      ]);
    } else {
      checkKeys(`${call}: auth`, auth, ['token', 'user']);
      const user = auth.user === undefined ? 'approver' : checkName(call, 'auth.user', auth.user);
      pairs = [[user, checkToken(call, 'auth.token', auth.token)]];
    }
    if (new Set(pairs.map(([, token]) => token)).size !== pairs.length) {
      throw new OptionsError(`${call}: auth.users: two users have the same token`);
    }
    this.#users = pairs.map(([user, token]) => ({ user, hash: digest(token) }));
  }

  /**
   * The user a bearer token belongs to, or null. Compared in constant time: both sides are
   * hashed to the same length and every user is compared, whichever matches.
   */
  userOfToken(token: string): string | null {
    const hash = digest(token);
    let found: string | null = null;
    for (const { user, hash: known } of this.#users) {
      if (timingSafeEqual(hash, known) && found === null) found = user;
    }
    return found;
  }

  /** The user the trusted proxy names in its header, or null when it names none. */
  userOfProxy(value: string | undefined): string | null {
    if (this.mode !== 'proxy' || value === undefined) return null;
    const user = value.trim();
    return user === '' || user.length > MAX_NAME || hasControl(user) ? null : user;
  }
}

/** The token of an `Authorization: Bearer <token>` header; null for another scheme or none. */
export function bearerToken(header: string | undefined): string | null {
  const match = header === undefined ? null : /^Bearer[ ]+(\S+)[ ]*$/i.exec(header);
  return match ? (match[1] as string) : null;
}
