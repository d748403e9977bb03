/**
 * The checkpoint codec's error messages word for word, and the shapes its quick checks leave to
 * the schema: the message and `path` of a `CheckpointError` are what an operator reads to repair
 * a stored run. (The rules that tie a context to its state: checkpoint-consistency.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { Agent, CheckpointError } from '../src/index.js';
import { accepted, awaitingBlob, edit, errorOf, executingBlob, T } from './support/checkpoint-blobs.js';
import { sequence } from './support/helpers.js';

const toolChild = (input: unknown) => ({
  tool: { snapshot: { status: 'active', input }, src: 'tool', syncSnapshot: false },
});

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
    const error = errorOf(edit(await awaitingBlob(), (c) => (c.format = 'langgraph')));
    expect(error.message).toBe('invalid checkpoint: format is "langgraph", expected "tollgate.checkpoint"');
    expect(error.path).toBe('format');
  });

  it('names the unsupported version and the ones this build reads', async () => {
    const blob = await awaitingBlob();
    const error = errorOf(edit(blob, (c) => (c.version = 99)));
    expect(error.message).toBe('invalid checkpoint: unsupported version 99; this build reads 1, 2, 3, 4, 5');
    expect(error.path).toBe('version');
    expect(errorOf(edit(blob, (c) => (c.version = '2'))).message).toBe(
      'invalid checkpoint: unsupported version "2"; this build reads 1, 2, 3, 4, 5',
    );
    expect(errorOf(edit(blob, (c) => (c.version = 6))).message).toBe(
      'invalid checkpoint: unsupported version 6; this build reads 1, 2, 3, 4, 5',
    );
    expect(errorOf(edit(blob, (c) => (c.version = 0))).path).toBe('version');
  });

  it('names a field of a call that the schema refuses', async () => {
    const error = errorOf(edit(await awaitingBlob(), (c) => (c.snapshot.context.calls[2].state = 'approved')));
    expect(error.path).toBe('snapshot.context.calls.2.state');
    expect(error.message).toMatch(/^invalid checkpoint: snapshot\.context\.calls\.2\.state: /);
  });

  it('a valid executing checkpoint (the write-ahead record, a queued sibling behind it) is accepted as such', async () => {
    const blob = await executingBlob();
    const c = JSON.parse(blob);
    expect(c.snapshot.value).toEqual({ running: 'executing' });
    expect(c.snapshot.context.calls.map((call: any) => call.state)).toEqual(['done', 'running', 'queued']);
    expect(c.snapshot.children).toEqual(toolChild(c.snapshot.context.calls[1]));
    const agent = accepted(blob);
    expect(agent.status).toBe('running');
    expect(agent.state.inflight).toEqual({ key: 'r:2.2', tool: 'send', step: 2 });
    expect(agent.state.pendingCalls).toEqual([]);
    expect(agent.checkpoint()).toBe(blob);
  });
});

describe('history entries and snapshot shapes the quick checks must leave to the schema', () => {
  const approval = { approved: true, by: 'a', note: '', at: T, callId: 'r:1#1' };
  const bad: [string, unknown][] = [
    ['null', null],
    ['a number', 5],
    ['an array', [1]],
    ['a tool entry with a numeric tool', { role: 'tool', tool: 5, result: 1 }],
    ['a tool entry with a malformed approval', { role: 'tool', tool: 't', result: 1, approval: 'yes' }],
    [
      'a tool entry with an approval of an unknown field',
      { role: 'tool', tool: 't', result: 1, approval: { ...approval, x: 1 } },
    ],
    [
      'a tool entry with an approval whose time is no time',
      { role: 'tool', tool: 't', result: 1, approval: { ...approval, at: 'noon' } },
    ],
    [
      'an approval given for always = false',
      { role: 'tool', tool: 't', result: 1, approval: { ...approval, always: false } },
    ],
    ['an approval with array args', { role: 'tool', tool: 't', result: 1, approval: { ...approval, args: [1] } }],
    ['a tool entry with a numeric error', { role: 'tool', tool: 't', error: 5 }],
    ['a tool entry with a numeric id', { role: 'tool', tool: 't', result: 1, id: 5 }],
    ['a tool entry with an unknown outcome kind', { role: 'tool', tool: 't', error: 'x', outcome: 'known' }],
    ['an unknown role shaped like a tool entry', { role: 'system', tool: 't', result: 1 }],
    ['an assistant entry with neither tool nor final', { role: 'assistant' }],
    ['an assistant call with array args', { role: 'assistant', tool: 't', args: [1] }],
    ['an assistant call with a numeric id', { role: 'assistant', tool: 't', args: {}, id: 5 }],
    ['an assistant call with numeric text', { role: 'assistant', tool: 't', args: {}, text: 5 }],
    ['several calls, only one of them', { role: 'assistant', calls: [{ id: 'a', tool: 't', args: {} }] }],
    [
      'several calls, one without an id',
      {
        role: 'assistant',
        calls: [
          { id: 'a', tool: 't', args: {} },
          { tool: 't', args: {} },
        ],
      },
    ],
    [
      'several calls, one with an extra field',
      {
        role: 'assistant',
        calls: [
          { id: 'a', tool: 't', args: {} },
          { id: 'b', tool: 't', args: {}, x: 1 },
        ],
      },
    ],
    ['several calls that are no array', { role: 'assistant', calls: { id: 'a', tool: 't', args: {} } }],
    [
      'several calls with numeric text',
      {
        role: 'assistant',
        calls: [
          { id: 'a', tool: 't', args: {} },
          { id: 'b', tool: 't', args: {} },
        ],
        text: 1,
      },
    ],
    ['a user entry with no content', { role: 'user' }],
  ];
  for (const [name, entry] of bad) {
    it(`refuses ${name}`, async () => {
      const error = errorOf(edit(await awaitingBlob(), (c) => c.snapshot.context.history.push(entry)));
      expect(error.path).toMatch(/^snapshot\.context\.history\.4(\.|$)/);
      expect(error.message).toMatch(/^invalid checkpoint: snapshot\.context\.history\.4/);
    });
  }

  it('accepts the entries a run writes, ids, text, approvals, edits, standing grants and an unknown outcome included', async () => {
    const entries = [
      { role: 'tool', tool: 'send', error: 'denied by human: no', outcome: 'unknown' },
      { role: 'assistant', tool: 'send', args: { to: 'x' }, id: 'call_1', text: 'sending' },
      {
        role: 'tool',
        tool: 'send',
        id: 'call_1',
        result: 1,
        approval: { ...approval, args: { to: 'z' }, always: true },
      },
      {
        role: 'assistant',
        calls: [
          { id: 'a', tool: 'send', args: {} },
          { id: 'b', tool: 'look', args: {} },
        ],
        text: 'both',
      },
      { role: 'tool', tool: 'send', id: 'a', result: 1, approval: { ...approval, standing: 'r:1#1' } },
      { role: 'tool', tool: 'look', id: 'b', error: 'invalid arguments: x' },
    ];
    // Before the last entry: the awaiting step's own assistant entry stays the last.
    const blob = edit(await awaitingBlob(), (c) => c.snapshot.context.history.splice(-1, 0, ...entries));
    const agent = accepted(blob);
    expect(agent.state.history.slice(3, 3 + entries.length)).toEqual(entries);
    expect(agent.checkpoint()).toBe(Agent.resume(agent.checkpoint(), { policy: sequence(), tools: [] }).checkpoint());
  });

  it('a snapshot that is null, has no context, or a history that is no array', async () => {
    const blob = await awaitingBlob();
    const none = errorOf(edit(blob, (c) => (c.snapshot = null)));
    expect(none.path).toBe('snapshot');
    const noContext = errorOf(edit(blob, (c) => delete c.snapshot.context));
    expect(noContext.path).toBe('snapshot.context');
    const notArray = errorOf(edit(blob, (c) => (c.snapshot.context.history = 'x')));
    expect(notArray.path).toBe('snapshot.context.history');
    const callsNotArray = errorOf(edit(blob, (c) => (c.snapshot.context.calls = {})));
    expect(callsNotArray.path).toBe('snapshot.context.calls');
  });
});

describe('a stored run that cannot be joined', () => {
  async function loadWith(head: string, append: string[]) {
    const { MemoryStore } = await import('../src/stores/memory.js');
    const store = new MemoryStore();
    await store.save('r', { status: 'done', head, from: 0, append, pendingCalls: [] }, 0);
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
    const head = edit(await awaitingBlob(), (c) => (c.snapshot.context.history = []));
    const error = await loadWith(head, ['{"role":"user","content":"go"}', 'null']);
    expect(error).toMatchObject({
      path: 'snapshot.context.history.1',
      message: 'Agent.load: run "r": invalid checkpoint: stored entry 1 is not a JSON object',
      runId: 'r',
    });
  });

  it('a head whose calls break a rule names the run and the rule', async () => {
    const head = edit(await awaitingBlob(), (c) => {
      c.snapshot.context.history = [];
      c.snapshot.context.calls[1].requestedAt = null;
    });
    const entries = JSON.parse(await awaitingBlob()).snapshot.context.history.map((e: unknown) => JSON.stringify(e));
    const error = await loadWith(head, entries);
    expect(error).toMatchObject({
      path: 'snapshot.context.calls.1.requestedAt',
      message:
        'Agent.load: run "r": invalid checkpoint: snapshot.context.calls.1.requestedAt: set exactly while the call is pending',
      runId: 'r',
    });
  });
});
