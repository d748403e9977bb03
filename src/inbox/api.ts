/**
 * The inbox's JSON API (docs/inbox.md lists it): the session, runs by status, one run, recording
 * decisions, checking an edit, and the change feed as server-sent events. Every route is behind
 * guard.ts's authentication and CSRF checks.
 */
import { Hono } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { streamSSE } from 'hono/streaming';
import { STATUSES, type Status } from '../../machines/types.js';
import type { Clock } from '../clock.js';
import type { AgentDefinition } from '../define.js';
import { CheckpointError, EditRejectedError, OptionsError, RunNotFoundError, RunStateError } from '../errors.js';
import { isPlainObject } from '../json.js';
import type { CheckpointStore } from '../store/contract.js';
import { submitMessage } from '../worker/message.js';
import { checkEdit, decideRun, parseDecisions } from './decide.js';
import type { RunFeed } from './feed.js';
import { csrfSubject, type InboxEnv, isHttps } from './guard.js';
import { DAMAGED_REASON, HttpError } from './http-errors.js';
import { SESSION_COOKIE, type Sessions } from './sessions.js';
import { type RunView, runDetail, runView, waitingSince } from './views.js';

/** What the API routes work with. */
export interface ApiContext {
  store: CheckpointStore;
  sessions: Sessions;
  feed: RunFeed;
  agents: ReadonlyMap<string, AgentDefinition<any>>;
  clock: Clock | undefined;
  now: () => number;
  sessionTtlMs: number;
  /** Milliseconds between SSE keep-alive comments. */
  heartbeatMs: number;
  /** Aborted when the server closes: every event stream ends. */
  closing: AbortSignal;
  /** Told of each run a listing left out because its stored state could not be read (to log it). */
  onDamaged(runId: string, version: number, error: unknown): void;
}

/** What a listing says of a run it left out: the client learns which, the server log why. */
export interface DamagedView {
  runId: string;
  reason: string;
}

const MAX_LIST = 500;

function numberParam(value: string | undefined, name: string, max: number): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0 || n > max) {
    throw new HttpError(
      400,
      'bad_request',
      `${name} must be a whole number from 0 to ${max}, got ${JSON.stringify(value)}`,
    );
  }
  return n;
}

async function jsonBody(c: { req: { json(): Promise<unknown>; header(name: string): string | undefined } }) {
  if (!/^application\/json\b/i.test(c.req.header('content-type') ?? '')) {
    throw new HttpError(415, 'bad_request', 'send the body as application/json');
  }
  try {
    return await c.req.json();
  } catch (error) {
    if (error instanceof HttpError) throw error;
    throw new HttpError(400, 'bad_request', 'the body is not valid JSON');
  }
}

/** The API's routes, to mount under `/api`. */
export function apiRoutes(ctx: ApiContext): Hono<InboxEnv> {
  const api = new Hono<InboxEnv>();

  api.get('/session', (c) => {
    const identity = c.get('identity');
    const subject = csrfSubject(identity);
    return c.json({ user: identity.user, via: identity.via, csrf: subject && ctx.sessions.csrfToken(subject) });
  });

  api.post('/session', (c) => {
    const identity = c.get('identity');
    if (identity.via !== 'bearer') {
      throw new HttpError(400, 'bad_request', 'log in with Authorization: Bearer <token>');
    }
    // Signing in again in the same browser keeps its session: a new one would replace the cookie
    // and leave the other tabs with a CSRF token of a session they no longer send.
    const held = getCookie(c, SESSION_COOKIE);
    const id = held !== undefined && ctx.sessions.reuse(held, identity.user) ? held : ctx.sessions.open(identity.user);
    setCookie(c, SESSION_COOKIE, id, {
      httpOnly: true,
      sameSite: 'Strict',
      path: '/',
      secure: isHttps(c),
      maxAge: Math.floor(ctx.sessionTtlMs / 1000),
    });
    return c.json({ user: identity.user, via: 'session', csrf: ctx.sessions.csrfToken(`session:${id}`) });
  });

  api.delete('/session', (c) => {
    const identity = c.get('identity');
    if (identity.session) ctx.sessions.close(identity.session);
    deleteCookie(c, SESSION_COOKIE, { path: '/' });
    return c.json({ user: null });
  });

  api.get('/runs', async (c) => {
    const q = c.req.query();
    const status = (q.status || 'awaiting_approval') as Status;
    if (!STATUSES.includes(status)) {
      throw new HttpError(400, 'bad_request', `status must be one of ${STATUSES.join(', ')}`);
    }
    const limit = numberParam(q.limit, 'limit', MAX_LIST) ?? 100;
    const minAge = numberParam(q.minAge, 'minAge', 2 ** 31);
    const maxAge = numberParam(q.maxAge, 'maxAge', 2 ** 31);
    const now = ctx.now();
    const summaries = await ctx.store.list({ status, ...(q.agent ? { agent: q.agent } : {}) });
    const views: RunView[] = [];
    // A run whose stored state cannot be read is that run's problem only: it is left out of
    // `runs` and named in `damaged`, and the full error goes to the server's log.
    const damaged: DamagedView[] = [];
    // Newest first: the list is oldest update first, so read it from the end. A run that waits
    // for approval is ordered by its oldest request, so all of those are read; for the other
    // statuses the last update is the order, and reading stops at `limit`.
    const waiting = status === 'awaiting_approval';
    for (const summary of summaries.reverse()) {
      if (!waiting && views.length >= limit) break;
      let view: RunView;
      try {
        const record = await ctx.store.load(summary.runId);
        if (!record || record.status !== status) continue;
        view = runView(record, now);
      } catch (error) {
        if (!(error instanceof CheckpointError)) throw error;
        ctx.onDamaged(summary.runId, summary.version, error);
        damaged.push({ runId: summary.runId, reason: DAMAGED_REASON });
        continue;
      }
      if (q.tool && !view.pendingCalls.some((call) => call.tool === q.tool)) continue;
      const age = (now - waitingSince(view)) / 1000;
      if ((minAge !== undefined && age < minAge) || (maxAge !== undefined && age > maxAge)) continue;
      views.push(view);
    }
    views.sort((a, b) => waitingSince(b) - waitingSince(a));
    const total =
      waiting || q.tool || minAge !== undefined || maxAge !== undefined
        ? views.length
        : summaries.length - damaged.length;
    return c.json({ now: new Date(now).toISOString(), total, runs: views.slice(0, limit), damaged });
  });

  api.get('/runs/:runId', async (c) => {
    const runId = c.req.param('runId');
    const record = await ctx.store.load(runId);
    if (!record) throw new RunNotFoundError(`no run ${JSON.stringify(runId)}`, { runId });
    const definition = record.agent === null ? undefined : ctx.agents.get(record.agent);
    const now = ctx.now();
    return c.json({ now: new Date(now).toISOString(), run: runDetail(record, now, definition) });
  });

  api.post('/runs/:runId/decisions', async (c) => {
    const decisions = parseDecisions(await jsonBody(c));
    const result = await decideRun(ctx.store, c.req.param('runId'), decisions, {
      by: c.get('identity').user,
      agents: ctx.agents,
      clock: ctx.clock,
    });
    return c.json(result, result.repeated ? 200 : 201);
  });

  // The user's next message to a run that answered: saved for a worker to answer, run here never.
  api.post('/runs/:runId/messages', async (c) => {
    const body = await jsonBody(c);
    if (!isPlainObject(body) || Object.keys(body).join() !== 'message' || typeof body.message !== 'string') {
      throw new HttpError(400, 'bad_request', 'the body must be { "message": "…" }');
    }
    const runId = c.req.param('runId');
    const record = await ctx.store.load(runId);
    if (!record) throw new RunNotFoundError(`no run ${JSON.stringify(runId)}`, { runId });
    const definition = record.agent === null ? undefined : ctx.agents.get(record.agent);
    if (!definition) {
      const agent = JSON.stringify(record.agent);
      throw new HttpError(
        409,
        'unknown_agent',
        `the inbox was not given the run's agent ${agent}: it cannot take a message`,
      );
    }
    try {
      const status = await submitMessage(ctx.store, { agent: definition, runId, message: body.message });
      return c.json({ runId, status }, 201);
    } catch (error) {
      if (error instanceof RunStateError) throw new HttpError(409, 'not_answered', error.message);
      throw error;
    }
  });

  api.post('/runs/:runId/calls/:callId/check', async (c) => {
    const body = await jsonBody(c);
    if (body === null || typeof body !== 'object' || !('args' in body)) {
      throw new OptionsError('the body must be { "args": { … } }');
    }
    try {
      const args = await checkEdit(ctx.store, c.req.param('runId'), c.req.param('callId'), body.args, {
        agents: ctx.agents,
        now: ctx.now(),
      });
      return c.json({ ok: true, args });
    } catch (error) {
      // A refused edit is the answer to this question, not a failure of the request.
      if (error instanceof EditRejectedError) return c.json({ ok: false, error: error.message });
      throw error;
    }
  });

  api.get('/events', (c) =>
    streamSSE(c, async (stream) => {
      let wake: () => void = () => {};
      const closed = new Promise<void>((resolve) => {
        wake = resolve;
      });
      stream.onAbort(() => wake());
      if (ctx.closing.aborted) wake();
      ctx.closing.addEventListener('abort', () => wake(), { once: true });
      const unsubscribe = ctx.feed.subscribe((change) => {
        void stream.writeSSE({ event: 'runs', data: JSON.stringify(change) }).catch(() => wake());
      });
      const beat = setInterval(() => void stream.write(': keep-alive\n\n').catch(() => wake()), ctx.heartbeatMs);
      try {
        await stream.writeSSE({ event: 'hello', data: JSON.stringify({ now: new Date(ctx.now()).toISOString() }) });
        await closed;
      } finally {
        clearInterval(beat);
        unsubscribe();
      }
    }),
  );

  return api;
}
