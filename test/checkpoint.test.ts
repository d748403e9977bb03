import { describe, expect, it } from 'vitest';
import { Agent, CHECKPOINT_FORMAT, CHECKPOINT_VERSION, CheckpointError, UserError } from '../src/index.js';
import { recorder, sequence } from './support/helpers.js';

/**
 * A run paused at step 2 (run id 'r') with a step of three calls: the pure `look` ran, the two
 * `send`s wait for approval.
 */
async function pausedBlob() {
  const t = recorder('send', { sideEffect: true });
  const agent = new Agent({
    runId: 'r',
    policy: sequence(
      { tool: 'look' },
      {
        calls: [
          { tool: 'look', args: { q: 1 } },
          { tool: 'send', args: { to: 'x' } },
          { tool: 'send', args: { to: 'y' } },
        ],
      },
    ),
    tools: [recorder('look').tool, t.tool],
  });
  await agent.start('unique-goal-text');
  return { blob: agent.checkpoint(), t };
}

function edit(blob: string, change: (c: any) => void): string {
  const c = JSON.parse(blob);
  change(c);
  return JSON.stringify(c);
}

describe('checkpoint format', () => {
  it('is canonical JSON with a format name and version 5, and round-trips exactly', async () => {
    expect(CHECKPOINT_VERSION).toBe(5);
    const { blob } = await pausedBlob();
    const c = JSON.parse(blob);
    expect(c.format).toBe(CHECKPOINT_FORMAT);
    expect(c.version).toBe(5);
    expect(Object.keys(c)).toEqual(['format', 'snapshot', 'version']);
    expect(c.snapshot.context.calls.map((call: any) => [call.key, call.state])).toEqual([
      ['r:2.1', 'done'],
      ['r:2.2', 'pending'],
      ['r:2.3', 'pending'],
    ]);
    expect(c.snapshot.context.standing).toEqual({});
    expect(c.snapshot.context).not.toHaveProperty('pending');
    expect(c.snapshot.context).not.toHaveProperty('inflight');
    const resumed = Agent.resume(blob, { policy: sequence(), tools: [] });
    expect(resumed.checkpoint()).toBe(blob);
    // A non-canonical copy (re-ordered, indented) reads the same and writes canonically.
    const pretty = JSON.stringify({ version: c.version, snapshot: c.snapshot, format: c.format }, null, 2);
    expect(Agent.resume(pretty, { policy: sequence(), tools: [] }).checkpoint()).toBe(blob);
  });

  it('stores the history once, not again in the policy actor input', async () => {
    const held = new Promise<never>(() => {});
    const agent = new Agent({ policy: () => held, tools: [] });
    void agent.start('unique-goal-text');
    const blob = agent.checkpoint();
    expect(JSON.parse(blob).snapshot.children.policy.snapshot.input).toEqual({ runId: agent.runId, step: 1 });
    expect(blob.split('unique-goal-text')).toHaveLength(2);
    await agent.cancel();
  });
});

describe('a bad checkpoint gets a CheckpointError, never a tool call', () => {
  /** The awaiting blob moved to `executing` the way the machine would: the first send in flight. */
  const toExecuting = (c: any) => {
    c.snapshot.value = { running: 'executing' };
    Object.assign(c.snapshot.context.calls[1], { state: 'running', requestedAt: null, expiresAt: null });
  };
  const cases: [string, (blob: string) => unknown, RegExp][] = [
    ['not a string', () => 42, /expected a string/],
    ['not JSON', () => '{"format":', /not JSON/],
    ['empty', () => '', /not JSON/],
    ['an array', () => '[]', /expected an object/],
    ['wrong format', (b) => edit(b, (c) => (c.format = 'langgraph')), /format is "langgraph"/],
    ['wrong version', (b) => edit(b, (c) => (c.version = 99)), /unsupported version 99/],
    [
      'a future version',
      (b) => edit(b, (c) => (c.version = 6)),
      /unsupported version 6; this build reads 1, 2, 3, 4, 5/,
    ],
    ['missing version', (b) => edit(b, (c) => delete c.version), /with format, version and snapshot/],
    ['unknown state', (b) => edit(b, (c) => (c.snapshot.value = 'sleeping')), /snapshot.value/],
    ['unknown running substate', (b) => edit(b, (c) => (c.snapshot.value = { running: 'dreaming' })), /snapshot.value/],
    [
      'a state the machine no longer has',
      (b) => edit(b, (c) => (c.snapshot.value = { running: 'checking' })),
      /snapshot.value/,
    ],
    [
      'the transient dispatching',
      (b) => edit(b, (c) => (c.snapshot.value = { running: 'dispatching' })),
      /snapshot.value/,
    ],
    ['steps negative', (b) => edit(b, (c) => (c.snapshot.context.steps = -1)), /snapshot.context.steps/],
    ['steps a string', (b) => edit(b, (c) => (c.snapshot.context.steps = '2')), /snapshot.context.steps/],
    [
      'history entry of a wrong shape',
      (b) => edit(b, (c) => c.snapshot.context.history.push({ role: 'system' })),
      /snapshot.context.history/,
    ],
    ['unknown context key', (b) => edit(b, (c) => (c.snapshot.context.extra = 1)), /snapshot.context/],
    [
      "version 1's pending beside the calls",
      (b) => edit(b, (c) => (c.snapshot.context.pending = null)),
      /snapshot.context: Unrecognized key: "pending"/,
    ],
    ['no calls', (b) => edit(b, (c) => delete c.snapshot.context.calls), /snapshot.context.calls/],
    ['no standing approvals', (b) => edit(b, (c) => delete c.snapshot.context.standing), /snapshot.context.standing/],
    ['no context', (b) => edit(b, (c) => delete c.snapshot.context), /snapshot.context/],
    [
      'a call state that does not exist',
      (b) => edit(b, (c) => (c.snapshot.context.calls[1].state = 'approved')),
      /snapshot.context.calls.1.state/,
    ],
    [
      'a call with an unknown key',
      (b) => edit(b, (c) => (c.snapshot.context.calls[1].approved = true)),
      /snapshot.context.calls.1/,
    ],
    [
      'calls removed while awaiting',
      (b) => edit(b, (c) => (c.snapshot.context.calls = [])),
      /calls must be set exactly while executing or awaiting approval/,
    ],
    [
      'a call key of another run',
      (b) => edit(b, (c) => (c.snapshot.context.calls[1].key = 'other:2.2')),
      /call other:2.2 is not call 2 of step 2 of run r/,
    ],
    [
      'calls of a step in the future',
      (b) =>
        edit(b, (c) => {
          for (const [i, call] of c.snapshot.context.calls.entries())
            Object.assign(call, { step: 9, key: `r:9.${i + 1}` });
        }),
      /is not call 1 of step 2 of run r/,
    ],
    [
      'a call whose arguments changed under its id',
      (b) => edit(b, (c) => (c.snapshot.context.calls[2].args = { to: 'attacker' })),
      /snapshot.context.calls.2.id: call id .* does not name this call/,
    ],
    [
      'awaiting approval with a call in flight',
      (b) =>
        edit(b, (c) =>
          Object.assign(c.snapshot.context.calls[2], { state: 'running', requestedAt: null, expiresAt: null }),
        ),
      /awaiting approval: the first call without an outcome is pending, none running/,
    ],
    ['executing without its tool actor', (b) => edit(b, toExecuting), /snapshot.children/],
    [
      "executing with the queued sibling's input",
      (b) =>
        edit(b, (c) => {
          toExecuting(c);
          const sibling = c.snapshot.context.calls[2];
          c.snapshot.children = {
            tool: { snapshot: { status: 'active', input: sibling }, src: 'tool', syncSnapshot: false },
          };
        }),
      /snapshot.children/,
    ],
    [
      'a renamed invoke',
      (b) =>
        edit(b, (c) => {
          c.snapshot.value = { running: 'deciding' };
          c.snapshot.context.calls = [];
          c.snapshot.children = {
            policy: { snapshot: { status: 'active', input: { runId: 'r', step: 3 } }, src: 'llm', syncSnapshot: false },
          };
        }),
      /snapshot.children/,
    ],
    ['done status on an active state', (b) => edit(b, (c) => (c.snapshot.status = 'done')), /status done does not fit/],
    ['a lone surrogate', (b) => b.replace('unique-goal-text', '\\ud800'), /canonical JSON/],
    ['a lone surrogate in a call', (b) => b.replace('"to":"y"', '"to":"\\udc00"'), /canonical JSON/],
    ['a huge number', (b) => b.replace('"steps":2', '"steps":1e400'), /snapshot.context.steps/],
  ];
  for (const [name, make, message] of cases) {
    it(name, async () => {
      const { blob, t } = await pausedBlob();
      let error: unknown;
      try {
        const agent = Agent.resume(make(blob) as string, { policy: sequence({ final: 1 }), tools: [t.tool] });
        // Had it been accepted: approve every call it says is pending.
        const all = Object.fromEntries(agent.state.pendingCalls.map((p) => [p.id, { approve: true as const }]));
        await agent.decide(all);
        await agent.run();
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(CheckpointError);
      expect(error).toBeInstanceOf(UserError);
      expect((error as Error).message).toMatch(message);
      expect(t.calls).toEqual([]);
    });
  }

  it('the error says where the problem is', async () => {
    const { blob } = await pausedBlob();
    const errorOf = (bad: string) => {
      try {
        Agent.resume(bad, { policy: sequence(), tools: [] });
      } catch (e) {
        return e as CheckpointError;
      }
    };
    expect(errorOf(edit(blob, (c) => (c.snapshot.context.usage.inputTokens = -5)))?.path).toBe(
      'snapshot.context.usage.inputTokens',
    );
    expect(errorOf(edit(blob, (c) => (c.snapshot.context.calls[2].attempt = 0)))?.path).toBe(
      'snapshot.context.calls.2.attempt',
    );
  });
});

describe('checkpoints of runs that never started', () => {
  it('an idle run and one cancelled before starting round-trip', async () => {
    const idle = new Agent({ runId: 'i', policy: sequence(), tools: [] });
    expect(Agent.resume(idle.checkpoint(), { policy: sequence(), tools: [] }).status).toBe('idle');
    await idle.cancel('never mind');
    const blob = idle.checkpoint();
    const back = Agent.resume(blob, { policy: sequence(), tools: [] });
    expect(back.status).toBe('cancelled');
    expect(back.checkpoint()).toBe(blob);
  });
});
