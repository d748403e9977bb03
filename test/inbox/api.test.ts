/**
 * The inbox's JSON API over real HTTP on loopback: listing, one run, recording decisions (never
 * running them), the refusals that change nothing, idempotency, and the change feed.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InboxServer } from '../../src/inbox/index.js';
import { Agent, agentOptionsOf, defineAgent, resumeOptionsOf } from '../../src/index.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { ManualClock } from '../../src/testing/index.js';
import { recordDecision, Worker } from '../../src/worker/index.js';
import { crashedRun, deskAgent, type Ledger, pausedRun, TOKENS } from './fixture.js';
import { call, startInbox } from './support.js';

let store: MemoryStore;
let ledger: Ledger;
let desk: ReturnType<typeof deskAgent>;
let inbox: InboxServer;
let url: string;
const dana = TOKENS.dana;

beforeEach(async () => {
  store = new MemoryStore();
  ledger = [];
  desk = deskAgent(ledger, { approvalTtlMs: 3_600_000 });
  await pausedRun(store, desk, 'r-old', 'refund A-1 500');
  await pausedRun(store, desk, 'r-two', 'refund+email A-2 700');
  ({ inbox, url } = await startInbox({ store, auth: { users: TOKENS }, agents: [desk] }));
});

afterEach(async () => {
  await inbox.close();
});

const pendingOf = async (runId: string) => (await store.load(runId))?.pendingCalls ?? [];
const decide = (runId: string, decisions: unknown, token = dana) =>
  call(url, 'POST', `/api/runs/${runId}/decisions`, { token, body: { decisions } });
const work = () => new Worker({ store, agents: [desk] }).drain();

describe('reading runs', () => {
  it('lists the runs awaiting approval, newest first, with goal and pending calls', async () => {
    const { status, body } = await call(url, 'GET', '/api/runs', { token: dana });
    expect(status).toBe(200);
    expect(body.runs.map((r: { runId: string }) => r.runId)).toEqual(['r-two', 'r-old']);
    const [two] = body.runs;
    expect(two.goal).toBe('refund+email A-2 700');
    expect(two.agent).toBe('desk');
    expect(two.pendingCalls.map((c: { tool: string }) => c.tool)).toEqual(['refund', 'email']);
    expect(two.pendingCalls[0]).toMatchObject({ key: 'r-two:1.1', expired: false, outcome: null, attempt: 1 });
    expect(Date.parse(two.pendingCalls[0].expiresAt) - Date.parse(two.pendingCalls[0].requestedAt)).toBe(3_600_000);
  });

  it('filters by tool, agent and age, and browses other statuses', async () => {
    const byTool = await call(url, 'GET', '/api/runs?tool=email', { token: dana });
    expect(byTool.body.runs.map((r: { runId: string }) => r.runId)).toEqual(['r-two']);
    expect((await call(url, 'GET', '/api/runs?agent=other', { token: dana })).body.runs).toEqual([]);
    expect((await call(url, 'GET', '/api/runs?minAge=3600', { token: dana })).body.runs).toEqual([]);
    expect((await call(url, 'GET', '/api/runs?maxAge=3600', { token: dana })).body.total).toBe(2);
    expect((await call(url, 'GET', '/api/runs?status=done', { token: dana })).body.runs).toEqual([]);
    expect((await call(url, 'GET', '/api/runs?status=nope', { token: dana })).status).toBe(400);
    expect((await call(url, 'GET', '/api/runs?limit=-1', { token: dana })).status).toBe(400);
  });

  it('shows one run with its history and its tools’ schemas; 404 for an unknown run', async () => {
    const { status, body } = await call(url, 'GET', '/api/runs/r-old', { token: dana });
    expect(status).toBe(200);
    expect(body.run.history[0]).toEqual({ role: 'user', content: 'refund A-1 500' });
    expect(body.run.tools.refund).toMatchObject({ description: 'Refund an order, in cents', editable: true });
    expect(body.run.tools.refund.parameters.properties.cents.type).toBe('integer');
    const missing = await call(url, 'GET', '/api/runs/nope', { token: dana });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
  });
});

describe('keys that Object.prototype has', () => {
  it('shows a tool called __proto__ like any other', async () => {
    const odd = defineAgent({
      name: 'odd',
      policy: () => ({ tool: '__proto__', args: {} }),
      tools: [{ name: '__proto__', description: 'odd', sideEffect: true, fn: () => 'x' }],
    });
    await new Agent({ ...agentOptionsOf(odd), store, runId: 'r-odd' }).start('go');
    const other = await startInbox({ store, auth: { users: TOKENS }, agents: [desk, odd] });
    try {
      const { body } = await call(other.url, 'GET', '/api/runs/r-odd', { token: dana });
      expect(Object.keys(body.run.tools)).toEqual(['__proto__']);
      expect(Object.getOwnPropertyDescriptor(body.run.tools, '__proto__')?.value).toMatchObject({
        description: 'odd',
        editable: true,
      });
    } finally {
      await other.inbox.close();
    }
  });

  it('a decision keyed __proto__ or constructor names no pending call: 409, nothing recorded, no repeat echoed', async () => {
    const [pending] = await pendingOf('r-old');
    const proto = JSON.parse('{"__proto__":{"approve":true}}');
    for (const decisions of [
      proto,
      { ...proto, [pending!.id]: { approve: true } },
      { constructor: { approve: true } },
    ]) {
      const answer = await decide('r-old', decisions);
      expect(answer.status, JSON.stringify(decisions)).toBe(409);
      expect(answer.body.error.code).toBe('stale');
    }
    expect((await store.load('r-old'))?.decision).toBeNull();
    // Once dana recorded a denial, a request naming only `__proto__` is no repeat of it.
    expect((await decide('r-old', { [pending!.id]: { approve: false, note: 'no' } })).status).toBe(201);
    const again = await decide('r-old', proto);
    expect(again.status).toBe(409);
    expect(again.body.repeated).toBeUndefined();
  });
});

describe('recording decisions', () => {
  it('records an approval by the authenticated user and runs nothing; a worker applies it', async () => {
    const [pending] = await pendingOf('r-old');
    const answer = await decide('r-old', { [pending!.id]: { approve: true, note: 'receipt ok' } });
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({ repeated: false, recorded: { by: 'dana' } });
    expect((await store.load('r-old'))?.decision?.by).toBe('dana');
    expect(ledger).toEqual([]);
    await work();
    expect(ledger).toEqual(['r-old:1 refund {"order":"A-1","cents":500,"memo":"refund A-1 500"}']);
    expect((await store.load('r-old'))?.status).toBe('done');
  });

  it('takes the approver from the authentication, never from the body', async () => {
    const [pending] = await pendingOf('r-old');
    const spoofed = await call(url, 'POST', '/api/runs/r-old/decisions', {
      token: dana,
      body: { decisions: { [pending!.id]: { approve: true } }, by: 'mallory' },
    });
    expect(spoofed.status).toBe(400);
    const inDecision = await decide('r-old', { [pending!.id]: { approve: true, by: 'mallory' } });
    expect(inDecision.status).toBe(400);
    expect((await store.load('r-old'))?.decision).toBeNull();
  });

  it('is idempotent by (call id, approver): a repeat answers 200 and changes nothing; another approver gets 409', async () => {
    const [pending] = await pendingOf('r-old');
    const decision = { [pending!.id]: { approve: true } };
    expect((await decide('r-old', decision)).status).toBe(201);
    const version = (await store.load('r-old'))?.version;
    const again = await decide('r-old', decision);
    expect(again.status).toBe(200);
    expect(again.body.repeated).toBe(true);
    expect((await store.load('r-old'))?.version).toBe(version);
    const other = await decide('r-old', decision, TOKENS.lee);
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('already_decided');
    await work();
    expect((await decide('r-old', decision)).body.repeated).toBe(true); // applied: still the same decision
    const late = await decide('r-old', decision, TOKENS.lee);
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('already_decided');
    expect(late.body.error.message).toMatch(/approved by "dana"/);
    expect(ledger).toHaveLength(1);
  });

  it('decides several calls together: an edited approval and a denial with its note', async () => {
    const [refund, email] = await pendingOf('r-two');
    const bad = await decide('r-two', {
      [refund!.id]: { approve: true, args: { order: 'A-2', cents: -5 } },
      [email!.id]: { approve: false, note: 'no email' },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.error).toMatchObject({ code: 'edit_rejected', callId: refund!.id });
    const noNote = await decide('r-two', { [email!.id]: { approve: false } });
    expect(noNote.status).toBe(400);
    expect(noNote.body.error.message).toMatch(/denial needs a note/);
    expect((await store.load('r-two'))?.decision).toBeNull();
    const good = await decide('r-two', {
      [refund!.id]: { approve: true, args: { order: 'A-2', cents: 650 } },
      [email!.id]: { approve: false, note: 'no email' },
    });
    expect(good.status).toBe(201);
    await work();
    expect(ledger).toEqual(['r-two:1.1 refund {"order":"A-2","cents":650}']);
    const run = await call(url, 'GET', '/api/runs/r-two', { token: dana });
    expect(JSON.stringify(run.body.run.history)).toContain('denied by human: no email');
  });

  it('checks an edit against the tool’s schema without recording it', async () => {
    const [refund] = await pendingOf('r-two');
    const path = `/api/runs/r-two/calls/${encodeURIComponent(refund!.id)}/check`;
    const ok = await call(url, 'POST', path, { token: dana, body: { args: { order: 'A-2', cents: 10 } } });
    expect(ok.body).toEqual({ ok: true, args: { order: 'A-2', cents: 10 } });
    const bad = await call(url, 'POST', path, { token: dana, body: { args: { order: 'A-2', cents: 'ten' } } });
    expect(bad.body.ok).toBe(false);
    expect(bad.body.error).toMatch(/cents/);
    const stale = await call(url, 'POST', '/api/runs/r-two/calls/nope/check', { token: dana, body: { args: {} } });
    expect(stale.status).toBe(409);
    expect((await store.load('r-two'))?.decision).toBeNull();
  });

  it('refuses stale and unknown calls (409), unknown runs (404), bad bodies (400, 413, 415), changing nothing', async () => {
    const version = (await store.load('r-old'))?.version;
    expect((await decide('r-old', { 'r-old:1#9@x': { approve: true } })).body.error.code).toBe('stale');
    expect((await decide('nope', { x: { approve: true } })).status).toBe(404);
    expect((await call(url, 'POST', '/api/runs/r-old/decisions', { token: dana, body: '{"decisions":' })).status).toBe(
      400,
    );
    const plain = { token: dana, body: '{}', headers: { 'content-type': 'text/plain' } };
    expect((await call(url, 'POST', '/api/runs/r-old/decisions', plain)).status).toBe(415);
    const huge = { decisions: { x: { approve: false, note: 'n'.repeat(70_000) } } };
    const tooBig = await call(url, 'POST', '/api/runs/r-old/decisions', { token: dana, body: huge });
    expect(tooBig.status).toBe(413);
    expect((await store.load('r-old'))?.version).toBe(version);
  });

  it('refuses an expired call with 410 and records nothing', async () => {
    await inbox.close();
    const clock = new ManualClock(Date.now() + 2 * 3_600_000);
    ({ inbox, url } = await startInbox({ store, auth: { users: TOKENS }, agents: [desk], clock }));
    const listed = await call(url, 'GET', '/api/runs', { token: dana });
    expect(listed.body.runs[0].pendingCalls[0].expired).toBe(true);
    const [pending] = await pendingOf('r-old');
    const answer = await decide('r-old', { [pending!.id]: { approve: true } });
    expect(answer.status).toBe(410);
    expect(answer.body.error).toMatchObject({ code: 'expired', callId: pending!.id });
    expect((await store.load('r-old'))?.decision).toBeNull();
  });

  it('refuses edits it cannot check when it was not given the agent definition (422)', async () => {
    await inbox.close();
    ({ inbox, url } = await startInbox({ store, auth: { users: TOKENS } }));
    expect((await call(url, 'GET', '/api/runs/r-old', { token: dana })).body.run.tools).toBeNull();
    const [pending] = await pendingOf('r-old');
    const answer = await decide('r-old', { [pending!.id]: { approve: true, args: { order: 'A-1', cents: 1 } } });
    expect(answer.status).toBe(422);
    expect(answer.body.error.message).toMatch(/definition/);
    expect((await decide('r-old', { [pending!.id]: { approve: true } })).status).toBe(201);
  });
});

describe('sending the next message', () => {
  const send = (runId: string, body: unknown, token = dana) =>
    call(url, 'POST', `/api/runs/${runId}/messages`, { token, body });

  it('saves a message to a run that answered and runs nothing; a worker answers it', async () => {
    const [pending] = await pendingOf('r-old');
    await decide('r-old', { [pending!.id]: { approve: true } });
    await work();
    expect((await store.load('r-old'))?.status).toBe('done');
    const ran = ledger.length;
    const answer = await send('r-old', { message: 'and the receipt?' });
    expect(answer.status).toBe(201);
    expect(answer.body).toEqual({ runId: 'r-old', status: 'running' });
    expect(ledger).toHaveLength(ran);
    expect((await store.load('r-old'))?.status).toBe('running');
    expect(await work()).toBe(1);
    const run = await Agent.load(store, 'r-old', resumeOptionsOf(desk));
    expect(run.status).toBe('done');
    expect(run.state.history.filter((e) => e.role === 'user').map((e) => e.content)).toEqual([
      'refund A-1 500',
      'and the receipt?',
    ]);
  });

  it('refuses what it cannot take, and changes nothing', async () => {
    const version = (await store.load('r-two'))?.version;
    const waiting = await send('r-two', { message: 'hello?' });
    expect([waiting.status, waiting.body.error.code]).toEqual([409, 'not_answered']);
    expect((await send('r-two', { message: 7 })).status).toBe(400);
    expect((await send('r-two', { message: 'hi', by: 'mallory' })).status).toBe(400);
    expect((await send('nope', { message: 'hi' })).status).toBe(404);
    expect((await call(url, 'POST', '/api/runs/r-two/messages', { body: { message: 'hi' } })).status).toBe(401);
    const bare = new Agent({ ...agentOptionsOf(desk), agent: undefined, store, runId: 'bare' } as never);
    await bare.start('refund A-3 100');
    const unknown = await send('bare', { message: 'hi' });
    expect([unknown.status, unknown.body.error.code]).toEqual([409, 'unknown_agent']);
    expect((await store.load('r-two'))?.version).toBe(version);
    expect(ledger).toEqual([]);
  });
});

describe('a call in flight at a crash', () => {
  it('is listed with its outcome unknown; it can be approved or denied as it was, not edited', async () => {
    await inbox.close();
    const clock = new ManualClock(Date.now());
    store = new MemoryStore({ now: () => clock.now() });
    expect(await crashedRun(store, clock, 'crashed')).toBe('awaiting_approval');
    ({ inbox, url } = await startInbox({ store, auth: { users: TOKENS }, agents: [desk] }));
    const { body } = await call(url, 'GET', '/api/runs', { token: dana });
    const [pending] = body.runs[0].pendingCalls;
    expect(pending).toMatchObject({ tool: 'refund', attempt: 2, outcome: 'unknown' });
    const edit = await decide('crashed', { [pending.id]: { approve: true, args: { order: 'A-9', cents: 1 } } });
    expect(edit.status).toBe(422);
    expect(edit.body.error.message).toMatch(/outcome is unknown/);
    expect((await decide('crashed', { [pending.id]: { approve: false, note: 'it went through' } })).status).toBe(201);
  });
});

describe('live updates', () => {
  it('streams a change when a run is decided elsewhere, and when it leaves the list', async () => {
    const controller = new AbortController();
    const response = await fetch(`${url}/api/events`, {
      headers: { authorization: `Bearer ${dana}` },
      signal: controller.signal,
    });
    expect(response.headers.get('content-type')).toMatch(/text\/event-stream/);
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let seen = '';
    const until = async (pattern: RegExp) => {
      while (!pattern.test(seen)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${pattern}: ${seen}`);
        seen += value;
      }
    };
    await until(/event: hello/);
    await new Promise((r) => setTimeout(r, 50)); // the feed's first read, which only notes what is there
    const [pending] = await pendingOf('r-old');
    await recordDecision(store, 'r-old', true, { by: 'terminal', callId: pending!.id });
    await until(/event: runs\ndata: \{"changed":\["r-old"\],"removed":\[\]\}/);
    await work();
    await until(/"removed":\["r-old"\]/);
    controller.abort();
  });
});
