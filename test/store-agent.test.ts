import { describe, expect, it } from 'vitest';
import { Agent, CheckpointError, ConflictError, LeaseLostError, RunNotFoundError, type Tool } from '../src/index.js';
import { joinRun } from '../src/store/contract.js';
import { MemoryStore } from '../src/stores/memory.js';
import { scriptedPolicy } from '../src/testing/index.js';
import { gate, idLike, mortal, recorder, sequence, until } from './support/helpers.js';

const mailPolicy = () => scriptedPolicy([{ tool: 'look' }, { tool: 'mail', args: { to: 'ops' } }, { final: 'sent' }]);

describe('an agent with a store', () => {
  it('saves every change; the store holds the same run as checkpoint()', async () => {
    const store = new MemoryStore();
    const mail = recorder('mail', { sideEffect: true });
    const agent = new Agent({ runId: 'r', store, policy: mailPolicy(), tools: [recorder('look').tool, mail.tool] });
    expect(agent.version).toBe(0);
    expect(await agent.start('go')).toBe('awaiting_approval');
    const stored = await store.load('r');
    expect(stored).toMatchObject({ runId: 'r', status: 'awaiting_approval', version: agent.version });
    expect(stored?.pending).toEqual(agent.state.pending);
    const loaded = await Agent.load(store, 'r', { policy: mailPolicy(), tools: [] });
    expect(loaded.checkpoint()).toBe(agent.checkpoint());
    expect(await store.list({ status: 'awaiting_approval' })).toEqual([expect.objectContaining({ runId: 'r' })]);
  });

  it('appends only new history entries: the head stays small', async () => {
    const store = new MemoryStore();
    const writes: { append: number; head: number }[] = [];
    const save = store.save.bind(store);
    store.save = (id, w, v, lease) => {
      writes.push({ append: w.append.length, head: w.head.length });
      return save(id, w, v, lease);
    };
    const big = 'x'.repeat(10_000);
    const agent = new Agent({
      store,
      maxSteps: 20,
      policy: sequence({ tool: 'echo' }),
      tools: [{ name: 'echo', fn: () => big }],
    });
    await agent.start('go');
    const appended = writes.reduce((n, w) => n + w.append, 0);
    expect(appended).toBe(agent.state.history.length);
    expect(Math.max(...writes.map((w) => w.head))).toBeLessThan(2000);
    expect((await store.load(agent.runId))?.entries).toHaveLength(41);
  });

  it('the store holds the call in flight before the tool runs (write ahead)', async () => {
    const store = new MemoryStore();
    let seen: unknown;
    const tool: Tool = {
      name: 'pay',
      sideEffect: true,
      fn: async (_args, key) => {
        seen = await store.load('r');
        return key;
      },
    };
    const agent = new Agent({ runId: 'r', store, policy: sequence({ tool: 'pay' }, { final: 'ok' }), tools: [tool] });
    await agent.start('go');
    await agent.decide(true, 'fine', { by: 'ann' });
    const head = JSON.parse(joinRun((seen as { head: string }).head, [], (seen as { base: string | null }).base));
    expect(head.snapshot.value).toEqual({ running: 'executing' });
    expect(head.snapshot.context.calls).toMatchObject([
      { key: 'r:1', state: 'running', approval: { approved: true, by: 'ann' } },
    ]);
  });

  it('a call cancelled while its write-ahead record is saved never starts, and its approval rule is not asked again', async () => {
    const store = new MemoryStore();
    const save = store.save.bind(store);
    const held = gate();
    let holdNext = false;
    let holding = false;
    store.save = async (...args) => {
      if (holdNext) {
        holdNext = false;
        holding = true;
        await held.promise;
      }
      return save(...args);
    };
    let asked = 0;
    const look = recorder('look', {
      sideEffect: true,
      needsApproval: () => {
        asked++;
        holdNext = true; // the next save is the call's write-ahead record
        return false;
      },
    });
    const agent = new Agent({
      runId: 'r',
      store,
      policy: sequence({ tool: 'look' }, { final: 'ok' }),
      tools: [look.tool],
    });
    void agent.start('go').catch(() => {});
    await until(() => holding);
    const cancelled = agent.cancel('stop');
    held.resolve(undefined);
    expect(await cancelled).toBe('cancelled');
    await new Promise((r) => setTimeout(r, 20));
    expect(look.calls).toEqual([]);
    expect(asked).toBe(1);
  });

  it('decides from another agent instance loaded from the store, and the first one then conflicts', async () => {
    const store = new MemoryStore();
    const mail = recorder('mail', { sideEffect: true });
    const tools = [recorder('look').tool, mail.tool];
    const first = new Agent({ runId: 'r', store, policy: mailPolicy(), tools });
    await first.start('go');
    const second = await Agent.load(store, 'r', { policy: mailPolicy(), tools });
    expect(await second.decide(true)).toBe('done');
    expect(mail.calls).toHaveLength(1);
    // The first instance is stale: its decision must not run the call again.
    const error = await first.decide(true).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConflictError);
    expect(mail.calls).toHaveLength(1);
    expect((await store.load('r'))?.status).toBe('done');
    // And it stays stopped.
    await expect(first.run()).rejects.toBeInstanceOf(ConflictError);
  });

  it('two agents with the same run id: the second start conflicts and runs nothing', async () => {
    const store = new MemoryStore();
    const a = recorder('look');
    await new Agent({ runId: 'r', store, policy: sequence({ final: 1 }), tools: [] }).start('go');
    const policy = sequence({ tool: 'look' });
    const twin = new Agent({ runId: 'r', store, policy, tools: [a.tool] });
    await expect(twin.start('go')).rejects.toBeInstanceOf(ConflictError);
    expect(a.calls).toEqual([]);
    expect(policy.calls).toEqual([]);
  });

  it('a failed save stops the run before the side effect', async () => {
    const store = new MemoryStore();
    const mail = recorder('mail', { sideEffect: true });
    const agent = new Agent({ runId: 'r', store, policy: mailPolicy(), tools: [recorder('look').tool, mail.tool] });
    await agent.start('go');
    store.save = async () => {
      throw new Error('disk full');
    };
    const error = await agent.decide(true).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/disk full/);
    expect(mail.calls).toEqual([]);
  });

  it('loading an unknown run throws RunNotFoundError', async () => {
    await expect(Agent.load(new MemoryStore(), 'nope', { policy: sequence(), tools: [] })).rejects.toBeInstanceOf(
      RunNotFoundError,
    );
  });

  it('a corrupt stored run throws CheckpointError and runs nothing', async () => {
    const store = new MemoryStore();
    const agent = new Agent({
      runId: 'r',
      store,
      policy: mailPolicy(),
      tools: [recorder('look').tool, recorder('mail', { sideEffect: true }).tool],
    });
    await agent.start('go');
    const record = await store.load('r');
    await store.save(
      'r',
      {
        status: 'awaiting_approval',
        head: '{"format":"x"}',
        from: record?.entries.length ?? 0,
        append: [],
        pendingCalls: [],
      },
      record?.version ?? 0,
    );
    await expect(Agent.load(store, 'r', { policy: sequence(), tools: [] })).rejects.toBeInstanceOf(CheckpointError);
  });

  it('resumes mid-call from the store after a crash, like from a checkpoint', async () => {
    const store = new MemoryStore();
    const held = gate();
    let calls = 0;
    const hanging: Tool = {
      name: 'pay',
      sideEffect: true,
      fn: () => {
        calls++;
        return held.promise;
      },
    };
    const dying = mortal(store);
    const agent = new Agent({
      runId: 'r',
      store: dying.store,
      leaseMs: 100,
      policy: sequence({ tool: 'pay' }, { final: 'ok' }),
      tools: [hanging],
    });
    await agent.start('go');
    const deciding = agent.decide(true);
    deciding.catch(() => {}); // it rejects once the process is cut off: asserted below
    await until(() => calls === 1);
    // The process "dies" here: the store has the write-ahead record; its lease lapses.
    dying.die();
    const pay = recorder('pay', { sideEffect: true });
    const resumed = await Agent.load(store, 'r', {
      policy: sequence({ final: 'ok' }),
      tools: [pay.tool],
      leaseWaitMs: 5_000,
    });
    expect(await resumed.run()).toBe('awaiting_approval');
    expect(resumed.state.pending).toMatchObject({ outcome: 'unknown', id: idLike('r:1#2') });
    expect(pay.calls).toEqual([]);
    expect((await store.list({ status: 'awaiting_approval' }))[0]?.pending?.outcome).toBe('unknown');
    // The dead process's own call gave up once its lease could no longer be renewed.
    await expect(deciding).rejects.toBeInstanceOf(LeaseLostError);
  });
});
