/**
 * The Agent facade's contract word for word: error classes, messages, the run id, status and
 * expected statuses they carry; what `run()` does in each status; `state`, `version`,
 * `extendBudget` and `observe` details; faults after a failed save.
 */
import { describe, expect, it } from 'vitest';
import {
  Agent,
  ConflictError,
  NoPendingApprovalError,
  OptionsError,
  RunNotFoundError,
  RunStateError,
  StaleApprovalError,
  SystemError,
  type Tool,
} from '../src/index.js';
import { MemoryStore } from '../src/stores/memory.js';
import { ManualClock } from '../src/testing/index.js';
import { gate, idLike, recorder, sequence, until } from './support/helpers.js';

async function thrown(work: () => unknown): Promise<any> {
  try {
    await work();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}

/** A run paused awaiting approval of `send` at step 1, run id 'r'. */
async function awaiting(options: { clock?: ManualClock; approvalTtlMs?: number } = {}) {
  const send = recorder('send', { sideEffect: true });
  const policy = sequence({ tool: 'send', args: { to: 'ops' } }, { final: 'ok' });
  const agent = new Agent({ runId: 'r', policy, tools: [send.tool], ...options });
  expect(await agent.start('go')).toBe('awaiting_approval');
  return { agent, send, policy };
}

describe('errors name the call, the value and the run', () => {
  it('start with a goal that is not a string', async () => {
    const agent = new Agent({ runId: 'r', policy: sequence({ final: 1 }), tools: [] });
    const error = await thrown(() => agent.start(42 as never));
    expect(error).toBeInstanceOf(OptionsError);
    expect(error).toMatchObject({
      message: 'start: goal must be a string or an array of messages, got 42',
      runId: 'r',
      status: 'idle',
    });
  });

  it('start while awaiting approval, and on a cancelled run', async () => {
    const { agent } = await awaiting();
    const error = await thrown(() => agent.start('again'));
    expect(error).toBeInstanceOf(RunStateError);
    expect(error).toMatchObject({
      message: 'start: the run is awaiting_approval; expected idle',
      expected: ['idle'],
      runId: 'r',
      status: 'awaiting_approval',
    });
    await agent.cancel();
    expect((await thrown(() => agent.start('again'))).message).toBe(
      'start: the run is cancelled; the run was cancelled',
    );
  });

  it('run before start', async () => {
    const agent = new Agent({ runId: 'r', policy: sequence({ final: 1 }), tools: [] });
    const error = await thrown(() => agent.run());
    expect(error).toBeInstanceOf(RunStateError);
    expect(error).toMatchObject({
      message: 'run: the run has not started; call start(goal)',
      expected: ['running', 'failed', 'budget_exhausted'],
      runId: 'r',
      status: 'idle',
    });
  });

  it('decide with bad arguments', async () => {
    const { agent } = await awaiting();
    const cases: [() => unknown, string][] = [
      [() => agent.decide(1 as never), 'decide: expected true, false or a map of decisions by call id, got 1'],
      [() => agent.decide(true, 5 as never), 'decide: note must be a string (without lone surrogates), got 5'],
      [() => agent.decide(true, 'a\ud800'), 'decide: note must be a string (without lone surrogates), got "a\\ud800"'],
      [
        () => agent.decide(true, '', { by: 5 as never }),
        'decide: by must be a string (without lone surrogates), got 5',
      ],
      // A call id passed where the options go is refused: it would approve whatever is pending.
      [
        () => agent.decide(true, 'ok', 'r:1#1' as never),
        'decide: options must be an object, got "r:1#1" (to name the call you reviewed, pass { callId })',
      ],
      [() => agent.decide(true, 'ok', null as never), 'decide: options must be an object, got null'],
      [
        () => agent.decide(true, 'ok', { callID: 'x' } as never),
        'decide: unknown option "callID" (did you mean "callId"?)',
      ],
      [
        () => agent.decide(true, '', { callId: 7 as never }),
        'decide: callId must be a string (without lone surrogates), got 7',
      ],
    ];
    for (const [call, message] of cases) {
      const error = await thrown(call);
      expect(error).toBeInstanceOf(OptionsError);
      expect(error).toMatchObject({ message, runId: 'r', status: 'awaiting_approval' });
    }
    expect(agent.status).toBe('awaiting_approval');
  });

  it('decide with nothing pending', async () => {
    const agent = new Agent({ runId: 'r', policy: sequence({ final: 1 }), tools: [] });
    await agent.start('go');
    const error = await thrown(() => agent.decide(true));
    expect(error).toBeInstanceOf(NoPendingApprovalError);
    expect(error).toMatchObject({
      message: 'decide: no call awaits approval (status done)',
      expected: ['awaiting_approval'],
      runId: 'r',
      status: 'done',
    });
  });

  it('decide with a stale call id', async () => {
    const { agent, send } = await awaiting();
    const error = await thrown(() => agent.decide(true, '', { callId: 'r:0#1' }));
    expect(error).toBeInstanceOf(StaleApprovalError);
    expect(error).toMatchObject({
      message: expect.stringMatching(/^decide: call "r:0#1" is not the pending call "r:1#1@[0-9a-f]{32}"$/),
      callId: 'r:0#1',
      pendingId: idLike('r:1#1'),
      runId: 'r',
      status: 'awaiting_approval',
    });
    expect(send.calls).toEqual([]);
  });

  it('cancel with a bad reason, and on a cancelled run; a run that answered is closed by it', async () => {
    const agent = new Agent({ runId: 'r', policy: sequence({ final: 1 }), tools: [] });
    const bad = await thrown(() => agent.cancel(3 as never));
    expect(bad).toBeInstanceOf(OptionsError);
    expect(bad).toMatchObject({
      message: 'cancel: reason must be a string (without lone surrogates), got 3',
      runId: 'r',
      status: 'idle',
    });
    await agent.start('go');
    expect(await agent.cancel('conversation closed')).toBe('cancelled');
    expect(agent.state).toMatchObject({ answer: 1, cancelReason: 'conversation closed' });
    const error = await thrown(() => agent.cancel());
    expect(error).toBeInstanceOf(RunStateError);
    expect(error).toMatchObject({
      message: 'cancel: the run is cancelled; the run was cancelled',
      expected: ['idle', 'running', 'awaiting_approval', 'budget_exhausted', 'failed', 'done'],
      status: 'cancelled',
    });
  });

  it('cancel without a reason records an empty one', async () => {
    const agent = new Agent({ policy: sequence({ final: 1 }), tools: [] });
    expect(await agent.cancel()).toBe('cancelled');
    expect(agent.state.cancelReason).toBe('');
  });

  it('extendBudget on a cancelled run', async () => {
    const agent = new Agent({ runId: 'r', policy: sequence({ final: 1 }), tools: [] });
    await agent.cancel('no');
    const error = await thrown(() => agent.extendBudget({ maxSteps: 3 }));
    expect(error).toBeInstanceOf(RunStateError);
    expect(error).toMatchObject({
      message: 'extendBudget: the run is cancelled; the run was cancelled',
      expected: ['idle', 'running', 'awaiting_approval', 'budget_exhausted', 'failed', 'done'],
      status: 'cancelled',
    });
  });

  it('load of a run the store does not have, and load with bad options', async () => {
    const store = new MemoryStore();
    const error = await thrown(() => Agent.load(store, 'nope', { policy: sequence(), tools: [] }));
    expect(error).toBeInstanceOf(RunNotFoundError);
    expect(error).toMatchObject({ message: 'load: no run "nope" in the store', runId: 'nope' });
    let loads = 0;
    store.load = async () => {
      loads++;
      return null;
    };
    const bad = await thrown(() => Agent.load(store, 'nope', { policy: sequence(), tools: [], maxSteps: -1 } as never));
    expect(bad).toBeInstanceOf(OptionsError);
    expect(loads).toBe(0);
  });
});

describe('decide', () => {
  it('records the default approver and an empty note', async () => {
    const clock = new ManualClock(Date.parse('2026-12-02T09:00:00.000Z'));
    const { agent, send } = await awaiting({ clock });
    clock.advance(5_000);
    expect(await agent.decide(true)).toBe('done');
    expect(send.calls).toHaveLength(1);
    expect(agent.state.history[2]).toEqual({
      role: 'tool',
      tool: 'send',
      result: 'ok',
      approval: { approved: true, by: 'human', note: '', at: '2026-12-02T09:00:05.000Z', callId: idLike('r:1#1') },
    });
  });

  it('a denial with the matching call id runs nothing and tells the model', async () => {
    const { agent, send, policy } = await awaiting();
    expect(await agent.decide(false, 'not now', { callId: agent.state.pending?.id as string, by: 'ann' })).toBe('done');
    expect(send.calls).toEqual([]);
    expect(policy.calls[1]?.[2]).toMatchObject({ error: 'denied by human: not now', approval: { by: 'ann' } });
  });
});

describe('run() in each status', () => {
  it('at the exact expiry time expires the pending call', async () => {
    const clock = new ManualClock(0);
    const { agent, send } = await awaiting({ clock, approvalTtlMs: 1_000 });
    clock.advance(999);
    expect(await agent.run()).toBe('awaiting_approval');
    expect(agent.state.history).toHaveLength(2);
    clock.advance(1);
    expect(await agent.run()).toBe('done');
    expect(send.calls).toEqual([]);
    expect(agent.state.history[2]).toEqual({ role: 'tool', tool: 'send', error: 'approval expired' });
  });

  it('without an expiry leaves the approval waiting', async () => {
    const clock = new ManualClock(0);
    const { agent } = await awaiting({ clock });
    clock.advance(10 ** 9);
    expect(await agent.run()).toBe('awaiting_approval');
    expect(agent.state.pending).toMatchObject({ id: idLike('r:1#1'), expiresAt: null });
  });

  it('on a failed run asks the policy again', async () => {
    let n = 0;
    const agent = new Agent({
      policyRetries: 0,
      tools: [],
      policy: () => {
        n++;
        if (n === 1) throw new Error('down');
        return { final: 'up' };
      },
    });
    expect(await agent.start('go')).toBe('failed');
    expect(agent.state.error).toBe('Error: down');
    expect(await agent.run()).toBe('done');
    expect(agent.state).toMatchObject({ answer: 'up', error: null, steps: 1 });
  });

  it('on a done or cancelled run returns the status and calls nothing', async () => {
    const policy = sequence({ final: 1 });
    const agent = new Agent({ policy, tools: [] });
    await agent.start('go');
    expect(await agent.run()).toBe('done');
    const cancelled = new Agent({ policy, tools: [] });
    await cancelled.cancel();
    expect(await cancelled.run()).toBe('cancelled');
    expect(policy.calls).toHaveLength(1);
  });

  it('on a run resumed mid-call finishes the call', async () => {
    const held = gate<never>();
    const first = new Agent({ runId: 'r', policy: () => held.promise, tools: [] });
    void first.start('go');
    const blob = first.checkpoint();
    await first.cancel();
    const policy = sequence({ final: 'x' });
    const resumed = Agent.resume(blob, { policy, tools: [] });
    expect(resumed.status).toBe('running');
    expect(policy.calls).toEqual([]);
    expect(await resumed.run()).toBe('done');
    expect(policy.calls).toHaveLength(1);
  });
});

describe('state, version, extendBudget', () => {
  it('state shows the call in flight by key, tool and step only, and null otherwise', async () => {
    const held = gate();
    const tool: Tool = { name: 'slow', fn: () => held.promise };
    const agent = new Agent({
      runId: 'r',
      policy: sequence({ tool: 'slow', args: { a: 1 } }, { final: 1 }),
      tools: [tool],
    });
    expect(agent.state.inflight).toBeNull();
    const done = agent.start('go');
    await until(() => agent.state.inflight !== null);
    expect(agent.state).toMatchObject({ status: 'running', inflight: { key: 'r:1', tool: 'slow', step: 1 } });
    expect(Object.keys(agent.state.inflight ?? {})).toEqual(['key', 'tool', 'step']);
    held.resolve('ok');
    expect(await done).toBe('done');
    expect(agent.state.inflight).toBeNull();
  });

  it('version is null without a store and follows the saves with one', async () => {
    expect(new Agent({ policy: sequence(), tools: [] }).version).toBeNull();
    const store = new MemoryStore();
    const agent = new Agent({ runId: 'r', store, policy: sequence({ final: 1 }), tools: [] });
    expect(agent.version).toBe(0);
    await agent.start('go');
    expect(agent.version).toBe((await store.load('r'))?.version);
    expect(agent.version).toBeGreaterThan(0);
  });

  it('extendBudget returns a copy of the new limits and keeps the others', async () => {
    const agent = new Agent({ policy: sequence({ final: 1 }), tools: [], maxSteps: 2, maxTokens: 50 });
    const limits = agent.extendBudget({ maxSteps: 5 });
    expect(limits).toEqual({ maxSteps: 5, maxTokens: 50, maxActiveMs: null, maxCostUsd: null });
    limits.maxSteps = 100;
    expect(agent.state.limits.maxSteps).toBe(5);
  });

  it('extendBudget on a resumed run lowers a limit before its policy call is made', async () => {
    const held = gate<never>();
    const first = new Agent({ policy: () => held.promise, tools: [], maxSteps: 5 });
    void first.start('go');
    const blob = first.checkpoint();
    await first.cancel();
    const policy = sequence({ final: 1 });
    const resumed = Agent.resume(blob, { policy, tools: [] });
    expect(resumed.extendBudget({ maxSteps: 0 })).toMatchObject({ maxSteps: 0 });
    expect(resumed.status).toBe('budget_exhausted');
    expect(await resumed.run()).toBe('budget_exhausted');
    expect(policy.calls).toEqual([]);
  });

  it('a resumed run with a store saves the raised limits', async () => {
    const store = new MemoryStore();
    const agent = new Agent({
      runId: 'r',
      store,
      policy: sequence({ tool: 't' }),
      tools: [recorder('t').tool],
      maxSteps: 1,
    });
    expect(await agent.start('go')).toBe('budget_exhausted');
    const loaded = await Agent.load(store, 'r', { policy: sequence({ final: 1 }), tools: [] });
    loaded.extendBudget({ maxSteps: 3 });
    await until(() => loaded.version !== agent.version);
    const again = await Agent.load(store, 'r', { policy: sequence({ final: 1 }), tools: [] });
    expect(again.state.limits.maxSteps).toBe(3);
  });

  it('a load with a lower limit applies it', async () => {
    const store = new MemoryStore();
    const agent = new Agent({
      runId: 'r',
      store,
      policy: sequence({ tool: 't' }),
      tools: [recorder('t').tool],
      maxSteps: 1,
    });
    await agent.start('go');
    const loaded = await Agent.load(store, 'r', { policy: sequence(), tools: [], maxSteps: 7 });
    expect(loaded.state.limits).toEqual({ maxSteps: 7, maxTokens: null, maxActiveMs: null, maxCostUsd: null });
    const plain = await Agent.load(store, 'r', { policy: sequence(), tools: [] });
    expect(plain.checkpoint()).toBe(agent.checkpoint());
  });
});

describe('observe', () => {
  it('a second observer does not replay what the first has seen', async () => {
    const agent = new Agent({ policy: sequence({ tool: 't' }, { final: 1 }), tools: [recorder('t').tool] });
    const first: string[] = [];
    agent.observe((e) => first.push(e.type));
    await agent.start('go');
    const second: string[] = [];
    agent.observe((e) => second.push(e.type));
    expect(second).toEqual([]);
    expect(first.filter((t) => t === 'entry')).toHaveLength(4);
  });

  it('observing a started run reports only new entries, with their index', async () => {
    const { agent } = await awaiting();
    const events: unknown[] = [];
    agent.observe((e) => events.push(e));
    await agent.decide(false, 'no');
    expect(events).toEqual([
      {
        type: 'entry',
        index: 2,
        entry: {
          role: 'tool',
          tool: 'send',
          error: 'denied by human: no',
          approval: expect.objectContaining({ approved: false, note: 'no' }),
        },
      },
      { type: 'deciding', step: 2 },
      { type: 'status', status: 'running' },
      { type: 'entry', index: 3, entry: { role: 'assistant', final: 'ok' } },
      { type: 'status', status: 'done' },
    ]);
  });

  it('an entry given to an observer is a copy', async () => {
    const agent = new Agent({ policy: sequence({ final: { n: 1 } }), tools: [] });
    let changed = false;
    agent.observe((e) => {
      if (e.type === 'entry' && 'final' in e.entry) {
        // The live entry is frozen (this would throw); the observer's copy is its own.
        (e.entry.final as { n: number }).n = 2;
        changed = true;
      }
    });
    await agent.start('go');
    expect(changed).toBe(true);
    expect(agent.state.answer).toEqual({ n: 1 });
    expect(agent.state.history[1]).toEqual({ role: 'assistant', final: { n: 1 } });
  });

  it('stop() stops only that observer; observing stops when none is left and can start again', async () => {
    const agent = new Agent({
      policy: sequence({ tool: 't' }, { tool: 'send' }),
      tools: [recorder('t').tool, recorder('send', { sideEffect: true }).tool],
    });
    const a: string[] = [];
    const b: string[] = [];
    const stopA = agent.observe((e) => a.push(e.type));
    agent.observe((e) => b.push(e.type));
    stopA();
    await agent.start('go');
    expect(a).toEqual([]);
    expect(b.at(-1)).toBe('status');
  });
});

describe('a run that cannot be saved', () => {
  it('a failed save is a SystemError that names the cause, and the run stays stopped', async () => {
    const store = new MemoryStore();
    const send = recorder('send', { sideEffect: true });
    const agent = new Agent({
      runId: 'r',
      store,
      policy: sequence({ tool: 'send' }, { final: 1 }),
      tools: [send.tool],
    });
    await agent.start('go');
    const version = (await store.load('r'))?.version;
    const cause = new Error('disk full');
    store.save = async () => {
      throw cause;
    };
    const error = await thrown(() => agent.decide(true));
    expect(error).toBeInstanceOf(SystemError);
    expect(error).toMatchObject({
      message: 'the run cannot go on in this process: Error: disk full',
      runId: 'r',
      cause,
    });
    expect(send.calls).toEqual([]);
    // Every later operation throws the same fault: nothing more runs in this process.
    for (const later of [
      () => agent.checkpoint(),
      () => agent.run(),
      () => agent.cancel(),
      () => agent.extendBudget({ maxSteps: 9 }),
    ]) {
      const again = await thrown(later);
      expect(again).toBeInstanceOf(SystemError);
      expect(again).toMatchObject({ message: error.message, cause });
    }
    expect(send.calls).toEqual([]);
    expect((await store.load('r'))?.version).toBe(version); // nothing written after the fault
  });

  it('a conflict is thrown as the ConflictError itself', async () => {
    const store = new MemoryStore();
    const first = new Agent({
      runId: 'r',
      store,
      policy: sequence({ tool: 'send' }),
      tools: [recorder('send', { sideEffect: true }).tool],
    });
    await first.start('go');
    const second = await Agent.load(store, 'r', {
      policy: sequence({ final: 1 }),
      tools: [recorder('send', { sideEffect: true }).tool],
    });
    await second.decide(false, 'no');
    const error = await thrown(() => first.decide(true));
    expect(error).toBeInstanceOf(ConflictError);
    expect(() => first.checkpoint()).toThrow(error);
  });
});
