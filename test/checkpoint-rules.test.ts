/**
 * The checkpoint codec's error messages and consistency rules, word for word: the message and
 * `path` of a `CheckpointError` are what an operator reads to repair a stored run.
 */
import { describe, expect, it } from 'vitest';
import { Agent, CheckpointError } from '../src/index.js';
import { recorder, sequence } from './support/helpers.js';

/** A run paused at step 2 awaiting approval of `send`, run id 'r'. */
async function pausedBlob(): Promise<string> {
  const agent = new Agent({
    runId: 'r',
    policy: sequence({ tool: 'look' }, { tool: 'send', args: { to: 'x' } }),
    tools: [recorder('look').tool, recorder('send', { sideEffect: true }).tool],
  });
  await agent.start('goal');
  return agent.checkpoint();
}

function edit(blob: string, change: (c: any) => void): string {
  const c = JSON.parse(blob);
  change(c);
  return JSON.stringify(c);
}

function errorOf(blob: unknown): CheckpointError {
  try {
    Agent.resume(blob as string, { policy: sequence({ final: 1 }), tools: [] });
  } catch (error) {
    expect(error).toBeInstanceOf(CheckpointError);
    return error as CheckpointError;
  }
  throw new Error('the checkpoint was accepted');
}

/** Moves an awaiting blob to `executing` the way the machine would (pending → inflight). */
function toExecuting(c: any): void {
  const { requestedAt: _r, expiresAt: _e, ...call } = c.snapshot.context.pending;
  c.snapshot.value = { running: 'executing' };
  c.snapshot.context.pending = null;
  c.snapshot.context.inflight = { ...call, approval: null };
  c.snapshot.children = {
    tool: { snapshot: { status: 'active', input: c.snapshot.context.inflight }, src: 'tool', syncSnapshot: false },
  };
}

describe('decodeCheckpoint messages', () => {
  it('names what was given instead of a string', () => {
    expect(errorOf(null)).toMatchObject({
      message: 'invalid checkpoint: expected a string, got null',
      path: undefined,
    });
    expect(errorOf(42).message).toBe('invalid checkpoint: expected a string, got number');
    expect(errorOf({}).message).toBe('invalid checkpoint: expected a string, got object');
  });

  it('names the wrong format and the expected one', async () => {
    const error = errorOf(edit(await pausedBlob(), (c) => (c.format = 'langgraph')));
    expect(error.message).toBe('invalid checkpoint: format is "langgraph", expected "tollgate.checkpoint"');
    expect(error.path).toBe('format');
  });

  it('names the unsupported version and the ones this build reads', async () => {
    const error = errorOf(edit(await pausedBlob(), (c) => (c.version = 99)));
    expect(error.message).toBe('invalid checkpoint: unsupported version 99; this build reads 1');
    expect(error.path).toBe('version');
    expect(errorOf(edit(await pausedBlob(), (c) => (c.version = '1'))).message).toBe(
      'invalid checkpoint: unsupported version "1"; this build reads 1',
    );
  });

  it('a valid executing checkpoint (the write-ahead record) is accepted as such', async () => {
    const blob = edit(await pausedBlob(), toExecuting);
    const agent = Agent.resume(blob, { policy: sequence({ final: 1 }), tools: [] });
    expect(agent.status).toBe('running');
    expect(agent.state.inflight).toEqual({ key: 'r:2', tool: 'send', step: 2 });
    expect(agent.checkpoint()).toBe(Agent.resume(agent.checkpoint(), { policy: sequence(), tools: [] }).checkpoint());
  });
});

describe('consistency rules between state and context', () => {
  const rules: [string, (c: any) => void, string, string][] = [
    [
      'a final status on a live state',
      (c) => (c.snapshot.status = 'done'),
      'snapshot.status',
      'status done does not fit state awaiting_approval',
    ],
    [
      'an active status on a final state',
      (c) => {
        c.snapshot.value = 'done';
        c.snapshot.context.pending = null;
      },
      'snapshot.status',
      'status active does not fit state done',
    ],
    [
      'no pending call while awaiting approval',
      (c) => (c.snapshot.context.pending = null),
      'snapshot.context.pending',
      'pending must be set exactly when awaiting_approval (state awaiting_approval)',
    ],
    [
      'a call in flight while awaiting approval',
      (c) => {
        const { requestedAt: _r, expiresAt: _e, ...call } = c.snapshot.context.pending;
        c.snapshot.context.inflight = { ...call, approval: null };
      },
      'snapshot.context.inflight',
      'inflight must be set exactly while executing a tool',
    ],
    [
      'executing with no call in flight',
      (c) => {
        toExecuting(c);
        c.snapshot.context.inflight = null;
        c.snapshot.children.tool.snapshot.input = null;
      },
      'snapshot.context.inflight',
      'inflight must be set exactly while executing a tool',
    ],
    [
      'a pending key of another run',
      (c) => (c.snapshot.context.pending.key = 'other:2'),
      'snapshot.context',
      'call key other:2 does not belong to run r at step 2',
    ],
    [
      'a stop reason while awaiting approval',
      (c) => (c.snapshot.context.stoppedBy = 'steps'),
      'snapshot.context.stoppedBy',
      'stoppedBy must be set exactly when budget_exhausted',
    ],
    [
      'budget_exhausted with no stop reason',
      (c) => {
        c.snapshot.value = 'budget_exhausted';
        c.snapshot.context.pending = null;
      },
      'snapshot.context.stoppedBy',
      'stoppedBy must be set exactly when budget_exhausted',
    ],
    [
      'a started run with no history',
      (c) => (c.snapshot.context.history = []),
      'snapshot.context.history',
      'a awaiting_approval run must have a history',
    ],
    [
      'a failed run with no history',
      (c) => {
        c.snapshot.value = 'failed';
        c.snapshot.context.pending = null;
        c.snapshot.context.history = [];
      },
      'snapshot.context.history',
      'a failed run must have a history',
    ],
    [
      'a policy actor on a state that invokes none',
      (c) => {
        c.snapshot.children = {
          policy: {
            snapshot: { status: 'active', input: { runId: 'r', step: 3 } },
            src: 'policy',
            syncSnapshot: false,
          },
        };
      },
      'snapshot.children',
      'the invoked actors do not match state "awaiting_approval"',
    ],
    [
      'deciding without its policy actor',
      (c) => {
        c.snapshot.value = { running: 'deciding' };
        c.snapshot.context.pending = null;
      },
      'snapshot.children',
      'the invoked actors do not match state {"running":"deciding"}',
    ],
    [
      'a policy actor asked for the wrong step',
      (c) => {
        c.snapshot.value = { running: 'deciding' };
        c.snapshot.context.pending = null;
        c.snapshot.children = {
          policy: {
            snapshot: { status: 'active', input: { runId: 'r', step: 2 } },
            src: 'policy',
            syncSnapshot: false,
          },
        };
      },
      'snapshot.children',
      'the invoked actors do not match state {"running":"deciding"}',
    ],
  ];
  for (const [name, change, path, why] of rules) {
    it(name, async () => {
      const error = errorOf(edit(await pausedBlob(), change));
      expect(error.path).toBe(path);
      expect(error.message).toBe(`invalid checkpoint: ${path}: ${why}`);
    });
  }

  it('idle and cancelled runs may have no history; their blobs round-trip', () => {
    const idle = new Agent({ runId: 'i', policy: sequence(), tools: [] }).checkpoint();
    const cancelled = edit(idle, (c) => {
      c.snapshot.value = 'cancelled';
      c.snapshot.status = 'done';
      c.snapshot.context.cancelReason = 'x';
    });
    expect(Agent.resume(cancelled, { policy: sequence(), tools: [] }).checkpoint()).toBe(cancelled);
    expect(Agent.resume(idle, { policy: sequence(), tools: [] }).checkpoint()).toBe(idle);
  });

  it('a deciding checkpoint with its policy actor is accepted and resumes the call', async () => {
    const blob = edit(await pausedBlob(), (c) => {
      c.snapshot.value = { running: 'deciding' };
      c.snapshot.context.pending = null;
      c.snapshot.context.history.push({ role: 'tool', tool: 'send', error: 'denied by human: no' });
      c.snapshot.children = {
        policy: { snapshot: { status: 'active', input: { runId: 'r', step: 3 } }, src: 'policy', syncSnapshot: false },
      };
    });
    const policy = sequence({ final: 'ok' });
    const agent = Agent.resume(blob, { policy, tools: [] });
    expect(JSON.parse(agent.checkpoint())).toEqual(JSON.parse(blob));
    expect(await agent.run()).toBe('done');
    expect(policy.calls).toHaveLength(1);
    expect(agent.state.steps).toBe(3);
  });
});

describe('history entries and snapshot shapes the quick checks must leave to the schema', () => {
  const bad: [string, unknown][] = [
    ['null', null],
    ['a number', 5],
    ['an array', [1]],
    ['a tool entry with a numeric tool', { role: 'tool', tool: 5, result: 1 }],
    ['a tool entry with a malformed approval', { role: 'tool', tool: 't', result: 1, approval: 'yes' }],
    ['a tool entry with a numeric error', { role: 'tool', tool: 't', error: 5 }],
    ['a tool entry with an unknown outcome kind', { role: 'tool', tool: 't', error: 'x', outcome: 'known' }],
    ['an unknown role shaped like a tool entry', { role: 'system', tool: 't', result: 1 }],
    ['an assistant entry with neither tool nor final', { role: 'assistant' }],
    ['an assistant call with array args', { role: 'assistant', tool: 't', args: [1] }],
    ['a user entry with no content', { role: 'user' }],
  ];
  for (const [name, entry] of bad) {
    it(`refuses ${name}`, async () => {
      const error = errorOf(edit(await pausedBlob(), (c) => c.snapshot.context.history.push(entry)));
      expect(error.path).toMatch(/^snapshot\.context\.history\.4(\.|$)/);
      expect(error.message).toMatch(/^invalid checkpoint: snapshot\.context\.history\.4/);
    });
  }

  it('accepts the entries a run writes, an unknown outcome included', async () => {
    const blob = edit(await pausedBlob(), (c) => {
      c.snapshot.context.history.push({ role: 'tool', tool: 'send', error: 'denied by human: no', outcome: 'unknown' });
    });
    const agent = Agent.resume(blob, { policy: sequence(), tools: [] });
    expect(agent.state.history[4]).toEqual({
      role: 'tool',
      tool: 'send',
      error: 'denied by human: no',
      outcome: 'unknown',
    });
  });

  it('a snapshot that is null, has no context, or a history that is no array', async () => {
    const blob = await pausedBlob();
    const none = errorOf(edit(blob, (c) => (c.snapshot = null)));
    expect(none.path).toBe('snapshot');
    const noContext = errorOf(edit(blob, (c) => delete c.snapshot.context));
    expect(noContext.path).toBe('snapshot.context');
    const notArray = errorOf(edit(blob, (c) => (c.snapshot.context.history = 'x')));
    expect(notArray.path).toBe('snapshot.context.history');
  });
});

describe('a stored run that cannot be joined', () => {
  async function loadWith(head: string, append: string[]) {
    const { MemoryStore } = await import('../src/stores/memory.js');
    const store = new MemoryStore();
    await store.save('r', { status: 'done', head, from: 0, append, pending: null }, 0);
    try {
      await Agent.load(store, 'r', { policy: sequence(), tools: [] });
    } catch (error) {
      expect(error).toBeInstanceOf(CheckpointError);
      return error as CheckpointError;
    }
    throw new Error('the stored run was accepted');
  }

  it('a head that is not JSON', async () => {
    const error = await loadWith('{"snapshot":', []);
    expect(error.path).toBe('head');
    expect(error.message).toMatch(/^Agent.load: run "r": invalid checkpoint: the stored head is not JSON \(.+\)$/);
  });

  it('a head that is not a checkpoint', async () => {
    const error = await loadWith('{"snapshot":{}}', []);
    expect(error).toMatchObject({
      path: 'head',
      message: 'Agent.load: run "r": invalid checkpoint: the stored head is not a checkpoint',
      runId: 'r',
    });
  });

  it('an entry that is not one JSON object', async () => {
    const head = edit(await pausedBlob(), (c) => (c.snapshot.context.history = []));
    const error = await loadWith(head, ['{"role":"user","content":"go"}', 'null']);
    expect(error).toMatchObject({
      path: 'snapshot.context.history.1',
      message: 'Agent.load: run "r": invalid checkpoint: stored entry 1 is not a JSON object',
      runId: 'r',
    });
  });
});
