/**
 * The inbox under things going wrong: a damaged run among good ones (it is that run's problem
 * only, and no error answer quotes its stored state or the server's files), one approver signing
 * in over and over (it never signs anyone else out), and a proxy-authenticated inbox mounted
 * through `fetch` reached under a rebound DNS name (refused, nothing recorded).
 */
import { mkdtempSync, readdirSync, rmSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createInboxServer, type InboxServer } from '../../src/inbox/index.js';
import { Sessions } from '../../src/inbox/sessions.js';
import type { CheckpointStore, RunWrite } from '../../src/index.js';
import { FileStore } from '../../src/stores/file.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { SqliteStore } from '../../src/stores/sqlite.js';
import { deskAgent, pausedRun, TOKENS } from './fixture.js';

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-inbox-robust-'));
  dirs.push(dir);
  return dir;
};

let inbox: InboxServer | null = null;
afterEach(async () => {
  await inbox?.close();
  inbox = null;
  vi.restoreAllMocks();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** One request through `inbox.fetch`, its body parsed. */
async function ask(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; text: string; body: any; headers: Headers }> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] = 'application/json';
  }
  const answer = await (inbox as InboxServer).fetch(new Request(`http://localhost${path}`, init));
  const text = await answer.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: answer.status, text, body: parsed, headers: answer.headers };
}

const bearer = { authorization: `Bearer ${TOKENS.dana}` };
/** What a damaged head holds: it must never reach a client. */
const GARBAGE = 'garbage from /srv/tollgate/secret-disk/runs.db';
const damagedWrite: RunWrite = { status: 'awaiting_approval', head: GARBAGE, from: 0, append: [], pendingCalls: [] };

describe('a damaged run among good ones', () => {
  const stores: [string, () => Promise<{ store: CheckpointStore; damage: () => Promise<void> }>][] = [
    [
      'MemoryStore, a head of garbage saved through the store',
      async () => {
        const store = new MemoryStore();
        return { store, damage: async () => void (await store.save('r-bad', damagedWrite, 0)) };
      },
    ],
    [
      'SqliteStore, a head of garbage saved through the store',
      async () => {
        const store = SqliteStore.open(join(tempDir(), 'inbox.db'));
        return { store, damage: async () => void (await store.save('r-bad', damagedWrite, 0)) };
      },
    ],
    [
      'FileStore, a journal cut short on disk (its error names the file)',
      async () => {
        const store = new FileStore({ dir: tempDir() });
        return {
          store,
          damage: async () => {
            await pausedRun(store, deskAgent([]), 'r-bad', 'refund B-2 200');
            const folder = readdirSync(join(store.dir, 'runs')).find((name) => name.includes('r-bad')) as string;
            const journal = readdirSync(join(store.dir, 'runs', folder)).find((n) => n.startsWith('journal-'));
            truncateSync(join(store.dir, 'runs', folder, journal as string), 3);
          },
        };
      },
    ],
  ];

  for (const [name, make] of stores) {
    it(`${name}: the others are listed, it is named as damaged, and no answer shows its state or a path`, async () => {
      const { store, damage } = await make();
      try {
        const desk = deskAgent([]);
        await pausedRun(store, desk, 'r-good', 'refund A-1 500');
        await damage();
        const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
        inbox = createInboxServer({ store, auth: { users: TOKENS }, agents: [desk] });

        const listed = await ask('GET', '/api/runs', bearer);
        expect(listed.status).toBe(200);
        expect(listed.body.runs.map((r: { runId: string }) => r.runId)).toEqual(['r-good']);
        expect(listed.body.total).toBe(1);
        expect(listed.body.damaged).toEqual([{ runId: 'r-bad', reason: "this run's stored state could not be read" }]);
        for (const leak of ['garbage', '/srv', tmpdir(), 'journal', 'at ']) expect(listed.text).not.toContain(leak);
        // The server's log has the whole error, once, however often the page polls.
        expect(logged).toHaveBeenCalledTimes(1);
        expect(String(logged.mock.calls[0]?.[0])).toContain('r-bad');
        expect(logged.mock.calls[0]?.[1]).toMatchObject({ name: 'CheckpointError' });
        expect((await ask('GET', '/api/runs', bearer)).body.damaged).toHaveLength(1);
        expect(logged).toHaveBeenCalledTimes(1);

        // The page is served as ever; it renders from this same list.
        expect((await ask('GET', '/', {})).status).toBe(200);

        // The damaged run itself, and a decision about it: a clear error, without its state or paths.
        const one = await ask('GET', '/api/runs/r-bad', bearer);
        expect(one.status).toBe(500);
        expect(one.body.error).toEqual({
          code: 'damaged',
          message: "this run's stored state could not be read (see the server log)",
          runId: 'r-bad',
        });
        const decided = await ask('POST', '/api/runs/r-bad/decisions', bearer, {
          decisions: { 'r-bad:1': { approve: true } },
        });
        expect(decided.status).toBe(500);
        expect(decided.body.error.code).toBe('damaged');
        for (const answer of [one, decided]) {
          for (const leak of ['garbage', '/srv', tmpdir(), 'journal']) expect(answer.text).not.toContain(leak);
        }
        expect(logged.mock.calls.length).toBeGreaterThanOrEqual(3); // each refused request is logged in full

        // The good run still works.
        expect((await ask('GET', '/api/runs/r-good', bearer)).status).toBe(200);
      } finally {
        await inbox?.close();
        inbox = null;
        await store.close();
      }
    });
  }
});

describe('sessions per user', () => {
  beforeEach(async () => {
    const store = new MemoryStore();
    inbox = createInboxServer({ store, auth: { users: TOKENS } });
  });

  const signIn = async (token: string) => {
    const answer = await ask('POST', '/api/session', { authorization: `Bearer ${token}` });
    expect(answer.status).toBe(200);
    return (answer.headers.get('set-cookie') ?? '').split(';')[0] as string;
  };
  const userOf = async (cookie: string) => {
    const answer = await ask('GET', '/api/session', { cookie });
    return answer.status === 200 ? answer.body.user : answer.status;
  };

  it('one approver signing in over and over signs no one else out, only their own oldest sessions', async () => {
    const lee = await signIn(TOKENS.lee);
    const first = await signIn(TOKENS.dana);
    let last = first;
    // Past the table's total too (10,000): before per-user caps, that signed everyone else out.
    for (let i = 0; i < 10_001; i++) last = await signIn(TOKENS.dana);
    expect(await userOf(lee)).toBe('lee');
    expect(await userOf(last)).toBe('dana');
    expect(await userOf(first)).toBe(401); // dana's oldest went first
  }, 60_000);

  it('caps each user (their oldest goes), and in all takes from whoever holds the most', () => {
    let now = 0;
    const sessions = new Sessions(1_000, () => now, { perUser: 5, total: 10 });
    const a = Array.from({ length: 5 }, () => sessions.open('a'));
    const b = Array.from({ length: 3 }, () => sessions.open('b'));
    const c = Array.from({ length: 2 }, () => sessions.open('c'));
    expect(sessions.size).toBe(10);
    const d = sessions.open('d'); // over the total: a, who holds the most, loses their oldest
    expect(sessions.userOf(a[0])).toBeNull();
    for (const id of [...a.slice(1), ...b, ...c, d]) expect(sessions.userOf(id)).not.toBeNull();
    // a signs in 1,000 times: only a's own sessions go.
    const many = Array.from({ length: 1_000 }, () => sessions.open('a'));
    for (const id of [...b, ...c, d]) expect(sessions.userOf(id)).not.toBeNull();
    expect(many.slice(-4).every((id) => sessions.userOf(id) === 'a')).toBe(true);
    expect(sessions.userOf(many[0])).toBeNull();
    expect(sessions.size).toBeLessThanOrEqual(10);
    // A renewed session is its user's newest: the last of theirs to go.
    const kept = many.at(-4) as string;
    expect(sessions.reuse(kept, 'a')).toBe(true);
    for (let i = 0; i < 3; i++) sessions.open('a');
    expect(sessions.userOf(kept)).toBe('a');
    expect(sessions.userOf(many.at(-3))).toBeNull();
    // Expired sessions are cleared before anyone live is taken.
    now = 2_000;
    const e = Array.from({ length: 5 }, () => sessions.open('e'));
    expect(sessions.size).toBe(5);
    for (const id of e) expect(sessions.userOf(id)).toBe('e');
  });
});

describe('a proxy-authenticated inbox mounted through fetch, without origins', () => {
  let store: MemoryStore;
  let callId: string;

  beforeEach(async () => {
    store = new MemoryStore();
    await pausedRun(store, deskAgent([]), 'r1', 'refund A-1 500');
    callId = (await store.load('r1'))?.pendingCalls[0]?.id as string;
    inbox = createInboxServer({ store, auth: { proxyHeader: 'X-Forwarded-User' } });
  });

  /** A request as the browser sends it to `host`, with the header a page on it could set itself. */
  const asHost = async (host: string, method = 'GET', path = '/api/runs', extra: Record<string, string> = {}) => {
    const headers = { host, 'x-forwarded-user': 'kim', ...extra };
    const request = new Request(`http://${host}${path}`, {
      method,
      headers,
      ...(method === 'POST' ? { body: JSON.stringify({ decisions: { [callId]: { approve: true } } }) } : {}),
    });
    if (method === 'POST') request.headers.set('content-type', 'application/json');
    expect(request.headers.get('host')).toBe(host); // the Host header really is sent
    return (inbox as InboxServer).fetch(request);
  };

  it('refuses a request addressed to a rebound DNS name (nothing recorded); answers loopback names', async () => {
    const csrf = ((await (await asHost('localhost', 'GET', '/api/session')).json()) as { csrf: string }).csrf;
    const evil = await asHost('evil.example:8470', 'POST', '/api/runs/r1/decisions', {
      origin: 'http://evil.example:8470',
      'sec-fetch-site': 'same-origin',
      'x-tollgate-csrf': csrf,
    });
    expect(evil.status).toBe(403);
    expect(((await evil.json()) as { error: { code: string } }).error.code).toBe('forbidden');
    expect((await asHost('evil.example')).status).toBe(403);
    expect((await asHost('evil.example', 'GET', '/api/session')).status).toBe(403);
    expect((await asHost('localhost.evil.example')).status).toBe(403);
    expect((await asHost('127.0.0.1.evil.example:80')).status).toBe(403);
    expect((await store.load('r1'))?.decision).toBeNull();

    for (const host of ['localhost', 'localhost:8470', '127.0.0.1:3000', '[::1]:8470', 'LOCALHOST']) {
      expect((await asHost(host)).status, host).toBe(200);
    }
    const good = await asHost('localhost:8470', 'POST', '/api/runs/r1/decisions', {
      origin: 'http://localhost:8470',
      'x-tollgate-csrf': csrf,
    });
    expect(good.status).toBe(201);
    expect((await store.load('r1'))?.decision?.by).toBe('kim');
  });

  it('answers the hosts of origins when they are given', async () => {
    await inbox?.close();
    const origins = ['https://approvals.example.com'];
    inbox = createInboxServer({ store, auth: { proxyHeader: 'X-Forwarded-User' }, origins });
    expect((await asHost('approvals.example.com')).status).toBe(200);
    expect((await asHost('evil.example')).status).toBe(403);
    expect((await asHost('localhost')).status).toBe(200);
  });

  it('token modes take no Host check: their credentials never travel to another name on their own', async () => {
    await inbox?.close();
    inbox = createInboxServer({ store, auth: { users: TOKENS } });
    const answer = await inbox.fetch(new Request('http://inbox.internal/api/runs', { headers: bearer }));
    expect(answer.status).toBe(200);
  });
});

describe('settings that carry secrets', () => {
  const SECRET = 'sEcReT-TOKEN-12345';
  /** No 4-character piece of the secret in the text. */
  const leaksNothing = (text: string) => {
    for (let i = 0; i + 4 <= SECRET.length; i++) expect(text).not.toContain(SECRET.slice(i, i + 4));
  };

  it('a malformed auth setting is refused without showing a token', () => {
    const store = new MemoryStore();
    const cases: unknown[] = [
      SECRET, // the token itself given as auth
      { users: [SECRET] },
      { users: { [SECRET]: 'dana' } }, // written the wrong way round
      { users: { dana: SECRET, [`${SECRET}\n`]: `${SECRET}-2` } },
      { token: SECRET, user: `${SECRET}\u0007` },
    ];
    for (const auth of cases) {
      let message = '';
      try {
        createInboxServer({ store, auth: auth as never });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/^createInboxServer: .*auth/);
      leaksNothing(message);
    }
  });
});
