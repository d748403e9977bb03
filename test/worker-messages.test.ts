/**
 * `submitMessage`: a stored run that answered takes the user's next message for a worker to
 * answer. Nothing runs in the caller (no policy call, no tool, no summary); the run is left
 * `running` at the write-ahead record of its first policy call, with its lease free, and a worker
 * answers it. Refusals change nothing.
 */
import { describe, expect, it } from 'vitest';
import { Agent, defineAgent, OptionsError, type Policy, RunStateError } from '../src/index.js';
import { MemoryStore } from '../src/stores/memory.js';
import { checkInvariants } from '../src/testing/index.js';
import { submitMessage, submitRun, Worker } from '../src/worker/index.js';

function desk() {
  const asked: string[] = [];
  const ran: string[] = [];
  let summaries = 0;
  const policy: Policy = (history) => {
    const last = history.at(-1);
    if (last?.role === 'user') {
      asked.push(last.content);
      return { tool: 'lookup', args: { q: last.content } };
    }
    return { final: `answered ${asked.length}` };
  };
  const def = defineAgent({
    name: 'desk',
    policy,
    tools: [
      {
        name: 'lookup',
        fn: ({ q }: { q: string }) => {
          ran.push(q);
          return `found ${q}`;
        },
      },
    ],
    maxSteps: 20,
    compaction: {
      when: { entries: 3 },
      keep: 1,
      summarize: () => {
        summaries++;
        return 'earlier turns';
      },
    },
  });
  return { def, asked, ran, summaries: () => summaries };
}

describe('submitMessage', () => {
  it('saves the message for a worker: nothing runs here, the worker answers it', async () => {
    const store = new MemoryStore();
    const { def, asked, ran, summaries } = desk();
    await submitRun(store, { agent: def, goal: 'first', runId: 'c' });
    expect(await new Worker({ store, agents: [def] }).drain()).toBe(1);
    expect((await store.load('c'))?.status).toBe('done');
    const before = { asked: asked.length, ran: ran.length, summaries: summaries() };

    expect(await submitMessage(store, { agent: def, runId: 'c', message: 'second' })).toBe('running');
    // Nothing ran in the caller: no policy call, no tool, no summary.
    expect({ asked: asked.length, ran: ran.length, summaries: summaries() }).toEqual(before);
    const stored = await store.load('c');
    expect(stored).toMatchObject({ status: 'running', agent: 'desk' });
    // The lease is free: a worker claims the run at once, and answers the new turn.
    expect(await new Worker({ store, agents: [def] }).drain()).toBe(1);
    const run = await Agent.load(store, 'c', { policy: def.policy, tools: def.tools });
    expect(run.status).toBe('done');
    expect(asked).toEqual(['first', 'second']);
    expect(run.state.turn.number).toBe(2);
    expect(run.state.history.filter((e) => e.role === 'user').map((e) => e.content)).toEqual(['first', 'second']);
    expect(await checkInvariants(run)).toEqual([]);
  });

  it('refuses a run that has not answered, an unknown run and a bad message; nothing changes', async () => {
    const store = new MemoryStore();
    const { def, asked } = desk();
    await submitRun(store, { agent: def, goal: 'first', runId: 'c' });
    const before = await store.load('c');
    await expect(submitMessage(store, { agent: def, runId: 'c', message: 'too soon' })).rejects.toThrow(RunStateError);
    await expect(submitMessage(store, { agent: def, runId: 'nope', message: 'hi' })).rejects.toMatchObject({
      name: 'RunNotFoundError',
      message: 'submitMessage: no run "nope" in the store',
      runId: 'nope',
    });
    await expect(submitMessage(store, { agent: def, runId: 'c', message: 7 as never })).rejects.toThrow(OptionsError);
    await expect(submitMessage(store, { agent: {} as never, runId: 'c', message: 'hi' })).rejects.toThrow(
      /submitMessage: agent must be an agent definition/,
    );
    const other = defineAgent({ name: 'other', policy: def.policy, tools: def.tools });
    await expect(submitMessage(store, { agent: other, runId: 'c', message: 'hi' })).rejects.toMatchObject({
      name: 'OptionsError',
      message: 'submitMessage: run "c" is of agent "desk", not "other"',
      runId: 'c',
    });
    expect(asked).toEqual([]);
    expect((await store.load('c'))?.version).toBe(before?.version);
    // The refused calls left no lease behind: a worker takes the run at once.
    expect(await new Worker({ store, agents: [def] }).drain()).toBe(1);
    expect(await store.load('nope')).toBeNull();
  });

  it('a run whose budget allows no policy call takes the message and stops there', async () => {
    const store = new MemoryStore();
    const { def } = desk();
    await submitRun(store, { agent: def, goal: 'first', runId: 'c', limits: { maxSteps: 2 } });
    await new Worker({ store, agents: [def] }).drain();
    expect(await submitMessage(store, { agent: def, runId: 'c', message: 'second' })).toBe('budget_exhausted');
    const stored = await Agent.load(store, 'c', { policy: def.policy, tools: def.tools });
    expect(stored.state).toMatchObject({ status: 'budget_exhausted', stoppedBy: 'steps' });
    expect(stored.state.history.at(-1)).toEqual({ role: 'user', content: 'second' });
  });

  it('a signal aborted once the run is claimed stops the call there: nothing saved, the lease given up', async () => {
    const store = new MemoryStore();
    const { def, asked } = desk();
    await submitRun(store, { agent: def, goal: 'first', runId: 'c' });
    await new Worker({ store, agents: [def] }).drain();
    const version = (await store.load('c'))?.version;
    const stop = new AbortController();
    // The caller gives up right after the claim: the load, the message and the save never happen.
    const claim = store.claim.bind(store);
    store.claim = async (...args) => {
      const lease = await claim(...args);
      stop.abort(new Error('user left'));
      return lease;
    };
    const sent = submitMessage(store, { agent: def, runId: 'c', message: 'x', signal: stop.signal });
    await expect(sent).rejects.toThrow('user left');
    expect((await store.load('c'))?.version).toBe(version);
    expect(asked).toEqual(['first']);
    // The lease was released: another owner claims the run at once.
    store.claim = claim;
    await expect(store.claim('c', { owner: 'someone-else', leaseMs: 1_000 })).resolves.toMatchObject({ runId: 'c' });
  });

  it('an aborted signal sends nothing', async () => {
    const store = new MemoryStore();
    const { def } = desk();
    await submitRun(store, { agent: def, goal: 'first', runId: 'c' });
    await new Worker({ store, agents: [def] }).drain();
    const version = (await store.load('c'))?.version;
    const signal = AbortSignal.abort(new Error('user left'));
    await expect(submitMessage(store, { agent: def, runId: 'c', message: 'x', signal })).rejects.toThrow('user left');
    expect((await store.load('c'))?.version).toBe(version);
  });
});
