/**
 * The consistency rules of src/checkpoint/consistency.ts, word for word: each is broken alone, in an
 * otherwise valid version-2 blob, and the `CheckpointError`'s message and `path` (what an operator
 * reads to repair a stored run) are checked. (Parse, version and schema messages, history shapes
 * and stored runs that cannot be joined: checkpoint-messages.test.ts.)
 */
import canonicalize from 'canonicalize';
import { describe, expect, it } from 'vitest';
import { callIdOf } from '../machines/index.js';
import { Agent } from '../src/index.js';
import { accepted, awaitingBlob, edit, errorOf, executingBlob, look, T } from './support/checkpoint-blobs.js';
import { recorder, sequence } from './support/helpers.js';

const policyChild = (step: number, src = 'policy') => ({
  policy: { snapshot: { status: 'active', input: { runId: 'r', step } }, src, syncSnapshot: false },
});
const toolChild = (input: unknown, src = 'tool') => ({
  tool: { snapshot: { status: 'active', input }, src, syncSnapshot: false },
});
/** A state with no calls and no invoke, status and stop reason made to fit. */
function rest(c: any, value: string): void {
  c.snapshot.value = value;
  c.snapshot.status = value === 'cancelled' ? 'done' : 'active';
  c.snapshot.context.calls = [];
  c.snapshot.children = {};
  if (value === 'budget_exhausted') c.snapshot.context.stoppedBy = 'steps';
}
/** Deciding step 3, the policy actor invoked. */
function deciding(c: any): void {
  c.snapshot.value = { running: 'deciding' };
  c.snapshot.context.calls = [];
  c.snapshot.children = policyChild(3);
}
const denial = { approved: false, by: 'a', note: 'no', at: T, callId: 'x' };

type Base = 'awaiting' | 'executing';
/** [name, the blob it edits, the edit, path, why]: the message is `invalid checkpoint: <path>: <why>`. */
const rules: [string, Base, (c: any) => void, string, string][] = [
  // The snapshot's status fits its state.
  [
    'a final status on a live state',
    'awaiting',
    (c) => (c.snapshot.status = 'done'),
    'snapshot.status',
    'status done does not fit state awaiting_approval',
  ],
  [
    'an active status on a final state',
    'awaiting',
    (c) => {
      rest(c, 'cancelled');
      c.snapshot.status = 'active';
    },
    'snapshot.status',
    'status active does not fit state cancelled',
  ],
  [
    // A run that answered goes on with a new message: not final (version 5).
    'a final status on done',
    'awaiting',
    (c) => {
      rest(c, 'done');
      c.snapshot.status = 'done';
    },
    'snapshot.status',
    'status done does not fit state done',
  ],
  [
    'a final status on budget_exhausted',
    'awaiting',
    (c) => {
      rest(c, 'budget_exhausted');
      c.snapshot.status = 'done';
    },
    'snapshot.status',
    'status done does not fit state budget_exhausted',
  ],
  // Calls are set exactly while executing or awaiting approval.
  [
    'no calls while awaiting approval',
    'awaiting',
    (c) => (c.snapshot.context.calls = []),
    'snapshot.context.calls',
    'calls must be set exactly while executing or awaiting approval (state awaiting_approval)',
  ],
  [
    'calls left on a done run',
    'awaiting',
    (c) => {
      const calls = c.snapshot.context.calls;
      rest(c, 'done');
      c.snapshot.context.calls = calls;
    },
    'snapshot.context.calls',
    'calls must be set exactly while executing or awaiting approval (state done)',
  ],
  [
    'calls left while deciding the next step',
    'awaiting',
    (c) => {
      const calls = c.snapshot.context.calls;
      deciding(c);
      c.snapshot.context.calls = calls;
    },
    'snapshot.context.calls',
    'calls must be set exactly while executing or awaiting approval (state running)',
  ],
  [
    'calls left on a budget_exhausted run',
    'awaiting',
    (c) => {
      const calls = c.snapshot.context.calls;
      rest(c, 'budget_exhausted');
      c.snapshot.context.calls = calls;
    },
    'snapshot.context.calls',
    'calls must be set exactly while executing or awaiting approval (state budget_exhausted)',
  ],
  [
    'executing with no calls',
    'executing',
    (c) => (c.snapshot.context.calls = []),
    'snapshot.context.calls',
    'calls must be set exactly while executing or awaiting approval (state running)',
  ],
  // Exactly one call runs while executing.
  [
    'executing with no call running',
    'executing',
    (c) => (c.snapshot.context.calls[1].state = 'queued'),
    'snapshot.context.calls',
    'exactly one call runs while executing',
  ],
  [
    'executing with two calls running',
    'executing',
    (c) => (c.snapshot.context.calls[2].state = 'running'),
    'snapshot.context.calls',
    'exactly one call runs while executing',
  ],
  // Awaiting approval: the first call without an outcome pending, none running.
  [
    'awaiting approval with nothing pending',
    'awaiting',
    (c) => {
      for (const call of c.snapshot.context.calls.slice(1)) {
        Object.assign(call, { state: 'done', requestedAt: null, expiresAt: null, done: { error: 'x' } });
      }
    },
    'snapshot.context.calls',
    'awaiting approval: the first call without an outcome is pending, none running',
  ],
  // A queued call may wait behind a pending one (calls take effect in their order), never before it.
  [
    'awaiting approval with a call queued before the first pending one',
    'awaiting',
    (c) => Object.assign(c.snapshot.context.calls[1], { state: 'queued', requestedAt: null, expiresAt: null }),
    'snapshot.context.calls',
    'awaiting approval: the first call without an outcome is pending, none running',
  ],
  [
    'awaiting approval with a call in flight',
    'awaiting',
    (c) => {
      const call = Object.assign(c.snapshot.context.calls[2], { state: 'running', requestedAt: null, expiresAt: null });
      c.snapshot.children = toolChild(call);
    },
    'snapshot.context.calls',
    'awaiting approval: the first call without an outcome is pending, none running',
  ],
  // Tool-call ids are unique in a step.
  [
    'two calls with one tool-call id',
    'awaiting',
    (c) => {
      for (const call of c.snapshot.context.calls.slice(1))
        Object.assign(call, { toolCallId: 'call_1', modelId: true });
    },
    'snapshot.context.calls',
    'two calls of the step share a tool-call id',
  ],
  // Each call is the i-th call of the current step of this run, by key, index and step.
  [
    'a call key of another run',
    'awaiting',
    (c) => (c.snapshot.context.calls[1].key = 'other:2.2'),
    'snapshot.context.calls.1',
    'call other:2.2 is not call 2 of step 2 of run r (key r:2.2)',
  ],
  [
    'two calls swapped (decisions go by id, keys by position)',
    'awaiting',
    (c) => {
      const calls = c.snapshot.context.calls;
      [calls[1], calls[2]] = [calls[2], calls[1]];
    },
    'snapshot.context.calls.1',
    'call r:2.3 is not call 2 of step 2 of run r (key r:2.2)',
  ],
  [
    'a call whose index is not its position',
    'awaiting',
    (c) => (c.snapshot.context.calls[2].index = 2),
    'snapshot.context.calls.2',
    'call r:2.3 is not call 3 of step 2 of run r (key r:2.3)',
  ],
  [
    'a call of an earlier step',
    'awaiting',
    (c) => (c.snapshot.context.calls[1].step = 1),
    'snapshot.context.calls.1',
    'call r:2.2 is not call 2 of step 2 of run r (key r:2.2)',
  ],
  [
    'calls of a step in the future',
    'awaiting',
    (c) => {
      for (const [i, call] of c.snapshot.context.calls.entries()) Object.assign(call, { step: 3, key: `r:3.${i + 1}` });
    },
    'snapshot.context.calls.0',
    'call r:3.1 is not call 1 of step 2 of run r (key r:2.1)',
  ],
  [
    'a one-call key in a step of several',
    'awaiting',
    (c) => (c.snapshot.context.calls[0].key = 'r:2'),
    'snapshot.context.calls.0',
    'call r:2 is not call 1 of step 2 of run r (key r:2.1)',
  ],
  [
    'the first call dropped',
    'awaiting',
    (c) => c.snapshot.context.calls.shift(),
    'snapshot.context.calls.0',
    'call r:2.2 is not call 1 of step 2 of run r (key r:2.1)',
  ],
  [
    // The keys of the calls left are consistent; only the step's assistant entry says one is gone.
    'the last call dropped',
    'awaiting',
    (c) => c.snapshot.context.calls.pop(),
    'snapshot.context.calls',
    "the calls are not the ones the step's assistant entry (the last entry) records",
  ],
  [
    'a call changed under its assistant entry, with a matching id',
    'awaiting',
    (c) => {
      const call = c.snapshot.context.calls[2];
      call.args = { to: 'attacker' };
      call.id = callIdOf(call.key, call.attempt, call.tool, call.args);
    },
    'snapshot.context.calls',
    "the calls are not the ones the step's assistant entry (the last entry) records",
  ],
  // The id names the call: its key, attempt, tool and arguments.
  [
    'arguments changed under the id',
    'awaiting',
    (c) => (c.snapshot.context.calls[2].args = { to: 'attacker' }),
    'snapshot.context.calls.2.id',
    'call id %ID2% does not name this call (tool, arguments, attempt)',
  ],
  [
    'the tool changed under the id',
    'awaiting',
    (c) => (c.snapshot.context.calls[2].tool = 'wire'),
    'snapshot.context.calls.2.id',
    'call id %ID2% does not name this call (tool, arguments, attempt)',
  ],
  [
    'the attempt changed under the id',
    'awaiting',
    (c) => (c.snapshot.context.calls[2].attempt = 2),
    'snapshot.context.calls.2.id',
    'call id %ID2% does not name this call (tool, arguments, attempt)',
  ],
  [
    "another call's id",
    'awaiting',
    (c) => (c.snapshot.context.calls[2].id = c.snapshot.context.calls[1].id),
    'snapshot.context.calls.2.id',
    'call id %ID1% does not name this call (tool, arguments, attempt)',
  ],
  [
    'a legacy id of another attempt',
    'awaiting',
    (c) => (c.snapshot.context.calls[2].id = 'r:2.3#2'),
    'snapshot.context.calls.2.id',
    'call id r:2.3#2 does not name this call (tool, arguments, attempt)',
  ],
  [
    'the id of a running call',
    'executing',
    (c) => {
      const call = c.snapshot.context.calls[1];
      call.args = { to: 'attacker' };
      c.snapshot.children = toolChild(call);
    },
    'snapshot.context.calls.1.id',
    'call id %ID1% does not name this call (tool, arguments, attempt)',
  ],
  // requestedAt is set exactly while the call is pending.
  [
    'a pending call never requested',
    'awaiting',
    (c) => (c.snapshot.context.calls[1].requestedAt = null),
    'snapshot.context.calls.1.requestedAt',
    'set exactly while the call is pending',
  ],
  [
    'a done call still requested',
    'awaiting',
    (c) => (c.snapshot.context.calls[0].requestedAt = T),
    'snapshot.context.calls.0.requestedAt',
    'set exactly while the call is pending',
  ],
  [
    'a queued call still requested',
    'executing',
    (c) => (c.snapshot.context.calls[2].requestedAt = T),
    'snapshot.context.calls.2.requestedAt',
    'set exactly while the call is pending',
  ],
  // expiresAt is set only while the call is pending.
  [
    'a done call that expires',
    'awaiting',
    (c) => (c.snapshot.context.calls[0].expiresAt = T),
    'snapshot.context.calls.0.expiresAt',
    'set only while the call is pending',
  ],
  [
    'a queued call that expires',
    'executing',
    (c) => (c.snapshot.context.calls[2].expiresAt = T),
    'snapshot.context.calls.2.expiresAt',
    'set only while the call is pending',
  ],
  [
    'a running call that expires',
    'executing',
    (c) => {
      const call = c.snapshot.context.calls[1];
      call.expiresAt = T;
      c.snapshot.children = toolChild(call);
    },
    'snapshot.context.calls.1.expiresAt',
    'set only while the call is pending',
  ],
  // done is set exactly when the call is done.
  [
    'a done call with no outcome',
    'awaiting',
    (c) => (c.snapshot.context.calls[0].done = null),
    'snapshot.context.calls.0.done',
    'set exactly when the call is done',
  ],
  [
    'a pending call with an outcome',
    'awaiting',
    (c) => (c.snapshot.context.calls[2].done = { result: 1 }),
    'snapshot.context.calls.2.done',
    'set exactly when the call is done',
  ],
  [
    'a queued call with an outcome',
    'executing',
    (c) => (c.snapshot.context.calls[2].done = { error: 'x' }),
    'snapshot.context.calls.2.done',
    'set exactly when the call is done',
  ],
  // A call that runs (queued or running) carries no denial.
  [
    'a queued call carrying a denial',
    'executing',
    (c) => (c.snapshot.context.calls[2].approval = denial),
    'snapshot.context.calls.2.approval',
    'a call that runs carries no denial',
  ],
  [
    'a running call carrying a denial',
    'executing',
    (c) => {
      const call = c.snapshot.context.calls[1];
      call.approval = denial;
      c.snapshot.children = toolChild(call);
    },
    'snapshot.context.calls.1.approval',
    'a call that runs carries no denial',
  ],
  // Without a model id, the tool-call id is the key.
  [
    'a tool-call id the model never gave',
    'awaiting',
    (c) => (c.snapshot.context.calls[1].toolCallId = 'call_1'),
    'snapshot.context.calls.1.toolCallId',
    'without a model id it is the key',
  ],
  // stoppedBy is set exactly when budget_exhausted.
  [
    'a stop reason while awaiting approval',
    'awaiting',
    (c) => (c.snapshot.context.stoppedBy = 'steps'),
    'snapshot.context.stoppedBy',
    'stoppedBy must be set exactly when budget_exhausted',
  ],
  [
    'budget_exhausted with no stop reason',
    'awaiting',
    (c) => {
      rest(c, 'budget_exhausted');
      c.snapshot.context.stoppedBy = null;
    },
    'snapshot.context.stoppedBy',
    'stoppedBy must be set exactly when budget_exhausted',
  ],
  // Only a run that never started (or was cancelled before) has no history.
  [
    'a started run with no history',
    'awaiting',
    (c) => (c.snapshot.context.history = []),
    'snapshot.context.history',
    'a awaiting_approval run must have a history',
  ],
  [
    'a failed run with no history',
    'awaiting',
    (c) => {
      rest(c, 'failed');
      c.snapshot.context.history = [];
    },
    'snapshot.context.history',
    'a failed run must have a history',
  ],
  [
    'a done run with no history',
    'awaiting',
    (c) => {
      rest(c, 'done');
      c.snapshot.context.history = [];
    },
    'snapshot.context.history',
    'a done run must have a history',
  ],
  // A standing approval is an approval given for always.
  [
    'a standing denial',
    'awaiting',
    (c) => (c.snapshot.context.standing = { send: { ...denial, always: true } }),
    'snapshot.context.standing.send',
    'a standing approval is an approval given for always',
  ],
  [
    'a standing approval not given for always',
    'awaiting',
    (c) => (c.snapshot.context.standing = { send: { ...denial, approved: true } }),
    'snapshot.context.standing.send',
    'a standing approval is an approval given for always',
  ],
  // A tool may be called `__proto__` (JSON.parse makes such a key): its grant is checked like any.
  [
    'a standing approval under __proto__ that is no approval record',
    'awaiting',
    (c) =>
      (c.snapshot.context.standing = JSON.parse(
        `{"__proto__":${JSON.stringify({ ...denial, approved: true, always: true, by: { not: 'a name' } })}}`,
      )),
    'snapshot.context.standing.__proto__',
    'a standing approval is an approval given for always',
  ],
  [
    'a null standing approval under __proto__',
    'awaiting',
    (c) => (c.snapshot.context.standing = JSON.parse('{"__proto__":null}')),
    'snapshot.context.standing.__proto__',
    'a standing approval is an approval given for always',
  ],
  [
    'a standing denial under __proto__',
    'awaiting',
    (c) => (c.snapshot.context.standing = JSON.parse(`{"__proto__":${JSON.stringify({ ...denial, always: true })}}`)),
    'snapshot.context.standing.__proto__',
    'a standing approval is an approval given for always',
  ],
  // The children are exactly the invoke of the state.
  [
    'a policy actor on a state that invokes none',
    'awaiting',
    (c) => (c.snapshot.children = policyChild(3)),
    'snapshot.children',
    'the invoked actors do not match state "awaiting_approval"',
  ],
  [
    'a tool actor on a state that invokes none',
    'awaiting',
    (c) => (c.snapshot.children = toolChild(c.snapshot.context.calls[1])),
    'snapshot.children',
    'the invoked actors do not match state "awaiting_approval"',
  ],
  [
    'deciding without its policy actor',
    'awaiting',
    (c) => {
      deciding(c);
      c.snapshot.children = {};
    },
    'snapshot.children',
    'the invoked actors do not match state {"running":"deciding"}',
  ],
  [
    'a policy actor asked for the wrong step',
    'awaiting',
    (c) => {
      deciding(c);
      c.snapshot.children = policyChild(2);
    },
    'snapshot.children',
    'the invoked actors do not match state {"running":"deciding"}',
  ],
  [
    'a renamed policy invoke',
    'awaiting',
    (c) => {
      deciding(c);
      c.snapshot.children = policyChild(3, 'llm');
    },
    'snapshot.children',
    'the invoked actors do not match state {"running":"deciding"}',
  ],
  [
    'executing without its tool actor',
    'executing',
    (c) => (c.snapshot.children = {}),
    'snapshot.children',
    'the invoked actors do not match state {"running":"executing"}',
  ],
  [
    'a renamed tool invoke',
    'executing',
    (c) => (c.snapshot.children = toolChild(c.snapshot.context.calls[1], 'tools')),
    'snapshot.children',
    'the invoked actors do not match state {"running":"executing"}',
  ],
  [
    'a tool actor running the queued sibling',
    'executing',
    (c) => (c.snapshot.children = toolChild(c.snapshot.context.calls[2])),
    'snapshot.children',
    'the invoked actors do not match state {"running":"executing"}',
  ],
  [
    'a tool actor given other arguments than the call in flight',
    'executing',
    (c) => (c.snapshot.children.tool.snapshot.input.args = { to: 'attacker' }),
    'snapshot.children',
    'the invoked actors do not match state {"running":"executing"}',
  ],
  [
    'a second actor beside the tool',
    'executing',
    (c) => Object.assign(c.snapshot.children, policyChild(3)),
    'snapshot.children',
    'the invoked actors do not match state {"running":"executing"}',
  ],
];

describe('consistency rules between state and context', () => {
  const bases: Record<Base, () => Promise<string>> = { awaiting: awaitingBlob, executing: executingBlob };
  for (const [name, base, change, path, why] of rules) {
    it(name, async () => {
      const blob = await bases[base]();
      const ids = JSON.parse(blob).snapshot.context.calls.map((c: any) => c.id);
      const error = errorOf(edit(blob, change));
      const expected = why.replace('%ID1%', ids[1]).replace('%ID2%', ids[2]);
      expect(error.path).toBe(path);
      expect(error.message).toBe(`invalid checkpoint: ${path}: ${expected}`);
    });
  }

  it('the bases break no rule: each edit above breaks exactly the one it names', async () => {
    for (const blob of [await awaitingBlob(), await executingBlob()]) expect(accepted(blob).checkpoint()).toBe(blob);
  });

  it('idle and cancelled runs may have no history; their blobs round-trip', () => {
    const idle = new Agent({ runId: 'i', policy: sequence(), tools: [] }).checkpoint();
    const cancelled = edit(idle, (c) => {
      c.snapshot.value = 'cancelled';
      c.snapshot.status = 'done';
      c.snapshot.context.cancelReason = 'x';
    });
    expect(accepted(cancelled).checkpoint()).toBe(cancelled);
    expect(accepted(idle).checkpoint()).toBe(idle);
  });

  it('a deciding checkpoint with its policy actor is accepted and resumes the call', async () => {
    const blob = edit(await awaitingBlob(), (c) => {
      deciding(c);
      c.snapshot.context.history.push(
        { role: 'tool', tool: 'look', id: 'r:2.1', result: 'ok' },
        { role: 'tool', tool: 'send', id: 'r:2.2', error: 'denied by human: no' },
        { role: 'tool', tool: 'send', id: 'r:2.3', error: 'denied by human: no' },
      );
    });
    const policy = sequence({ final: 'ok' });
    const agent = Agent.resume(blob, { policy, tools: [] });
    expect(JSON.parse(agent.checkpoint())).toEqual(JSON.parse(blob));
    expect(await agent.run()).toBe('done');
    expect(policy.calls).toHaveLength(1);
    expect(agent.state.steps).toBe(3);
  });

  it('a legacy call id (`key#attempt`, as version 1 wrote it) is accepted and decided by', async () => {
    const send = recorder('send', { sideEffect: true });
    const blob = edit(await awaitingBlob(), (c) => (c.snapshot.context.calls[2].id = 'r:2.3#1'));
    const agent = Agent.resume(blob, { policy: sequence({ final: 1 }), tools: [look, send.tool] });
    expect(agent.checkpoint()).toBe(blob);
    expect(agent.state.pendingCalls.map((p) => p.id)).toEqual([
      JSON.parse(blob).snapshot.context.calls[1].id,
      'r:2.3#1',
    ]);
    await agent.decide(true, 'ok', { callId: 'r:2.3#1' });
    expect(send.calls).toEqual([]); // approved, waiting behind call 2: calls take effect in their order
    await agent.decide(false, 'no', { callId: JSON.parse(blob).snapshot.context.calls[1].id });
    expect(send.calls).toEqual([{ args: { to: 'y' }, key: 'r:2.3' }]);
  });

  it("a model's tool-call id is accepted as the call's own", async () => {
    const blob = edit(await awaitingBlob(), (c) => {
      Object.assign(c.snapshot.context.calls[1], { toolCallId: 'call_1', modelId: true });
      c.snapshot.context.history[3].calls[1].id = 'call_1';
    });
    expect(accepted(blob).checkpoint()).toBe(blob);
  });

  it('a standing approval given for always is accepted', async () => {
    const grant = { approved: true, always: true, by: 'a', note: 'all sends', at: T, callId: 'r:1#1' };
    const blob = edit(await awaitingBlob(), (c) => (c.snapshot.context.standing = { send: grant }));
    const agent = accepted(blob);
    expect(agent.state.standing).toEqual({ send: grant });
    expect(agent.checkpoint()).toBe(canonicalize(JSON.parse(blob)));
  });
});
