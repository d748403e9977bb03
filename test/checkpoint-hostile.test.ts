/**
 * Hostile blobs under version 2: nesting deep enough to overflow a recursive parser, lone
 * surrogates (they parse but can never be written back canonically) in every place a version-2
 * blob keeps user data, `__proto__` keys in the calls of a step. Each ends in a `CheckpointError`
 * or in a run that round-trips exactly; never another error, never a tool call.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodeCheckpoint, nestingDepth } from '../src/checkpoint/index.js';
import { Agent, CheckpointError, EditRejectedError } from '../src/index.js';
import { MemoryStore } from '../src/stores/memory.js';
import { gate, recorder, sequence, until } from './support/helpers.js';

const fixture = (name: string) => readFileSync(`test/fixtures/checkpoints/v2/${name}.json`, 'utf8');

/** `depth` nested arrays around `leaf`. */
function nested(depth: number, leaf: unknown = 1): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

function refusal(blob: string): CheckpointError {
  try {
    Agent.resume(blob, { policy: sequence({ final: 1 }), tools: [] });
  } catch (error) {
    expect(error).toBeInstanceOf(CheckpointError);
    return error as CheckpointError;
  }
  throw new Error('the checkpoint was accepted');
}

/** A step of two `send`s, both pending, run 'r'; the send held in flight when approved. */
async function twoSends() {
  const held = gate();
  const send = recorder('send', { sideEffect: true }, () => held.promise);
  const policy = sequence(
    {
      calls: [
        { tool: 'send', args: { to: 'x' } },
        { tool: 'send', args: { to: 'y' } },
      ],
    },
    { final: 1 },
  );
  const agent = new Agent({ runId: 'r', policy, tools: [send.tool] });
  await agent.start('go');
  return { agent, send, held, policy };
}

describe('nesting depth', () => {
  it('a blob nested thousands deep in a call is a CheckpointError, not a RangeError', () => {
    const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
    const blob = fixture('several-two-pending-one-done').replace(
      '"args":{"to":"ops@example.com"}',
      `"args":{"to":${deep}}`,
    );
    const depth = nestingDepth(blob);
    expect(depth).toBe(20_006);
    const error = refusal(blob);
    expect(error.message).toBe(
      `invalid checkpoint: nests ${depth} levels deep; a run's values nest at most 512 (the checkpoint 520)`,
    );
    expect(error.path).toBeUndefined();
  });

  it('one level past the checkpoint bound is refused before parsing', () => {
    const blob = fixture('done').replace(
      '"answer":{"done":true',
      `"answer":{"deep":${JSON.stringify(nested(517))},"done":true`,
    );
    expect(nestingDepth(blob)).toBe(521);
    expect(refusal(blob).message).toMatch(/^invalid checkpoint: nests 521 levels deep/);
  });

  it('the deepest value a run holds, at the deepest place version 2 puts it (an edit in flight), resumes', async () => {
    const { agent, send, held, policy } = await twoSends();
    const [x, y] = agent.state.pendingCalls;
    // An approver's edit as deep as a value may be: the edit of a call in flight is kept three
    // times (the call, the tool actor's input, later the tool entry), the deepest in the input.
    const args = { a: nested(511) };
    await expect(agent.decide({ [x!.id]: { approve: true, args: { a: nested(512) } } })).rejects.toThrow(
      EditRejectedError,
    );
    const deciding = agent.decide({ [x!.id]: { approve: true, args } });
    await until(() => send.calls.length === 1);
    const inFlight = agent.checkpoint();
    expect(nestingDepth(inFlight)).toBe(519);
    expect(JSON.parse(inFlight).snapshot.children.tool.snapshot.input.approval.args).toEqual(args);
    const again = Agent.resume(inFlight, { policy, tools: [send.tool] });
    expect(again.checkpoint()).toBe(inFlight);
    held.resolve('ok');
    expect(await deciding).toBe('awaiting_approval');
    // Done, beside its pending sibling: the edit in the call's outcome and in nothing deeper.
    const after = agent.checkpoint();
    expect(JSON.parse(after).snapshot.context.calls[0].done.approval.args).toEqual(args);
    expect(Agent.resume(after, { policy, tools: [send.tool] }).checkpoint()).toBe(after);
    await agent.decide({ [y!.id]: { approve: true } });
    expect(agent.status).toBe('done');
    expect(Agent.resume(agent.checkpoint(), { policy, tools: [] }).checkpoint()).toBe(agent.checkpoint());
  });
});

describe('lone surrogates', () => {
  const cannotWriteBack =
    'invalid checkpoint: cannot be written back as canonical JSON (Lone surrogate is not allowed)';
  const places: [string, () => string][] = [
    ['in the goal (escaped)', () => fixture('awaiting-approval').replace('refund order A-1', '\\ud800')],
    ['in the goal (raw)', () => fixture('awaiting-approval').replace('refund order A-1', '\ud800')],
    ['in a final answer', () => fixture('done').replaceAll('"x"]', '"\\udfff"]')],
    ['in a standing approval', () => fixture('several-standing-approval').replaceAll('all refunds today', '\\ud800')],
    [
      "in a done call's result",
      () => fixture('several-two-pending-one-done').replace('"result":{"id":"A-1"', '"result":{"id":"\\ud800"'),
    ],
    // The places the rules read before the surrogate check: a call's arguments and tool (for its
    // id's digest), and the invoked actor's input (compared canonically).
    [
      "in a pending call's arguments",
      () => fixture('several-two-pending-one-done').replace('"to":"ops@example.com"', '"to":"\\ud800"'),
    ],
    ["in a pending call's tool", () => fixture('awaiting-approval').replace('"tool":"refund"', '"tool":"re\\udc00"')],
    [
      'in the approval note of a call in flight',
      () => fixture('running-executing-approved').replaceAll('"note":"ok"', '"note":"\\ud800"'),
    ],
    ["in a deciding run's id", () => fixture('running-deciding').replaceAll('"fx-2"', '"fx\\ud800"')],
  ];
  for (const [name, make] of places) {
    it(`${name}: a CheckpointError`, () => {
      const blob = make();
      expect(blob).not.toBe(fixture('done'));
      expect(refusal(blob).message).toBe(cannotWriteBack);
    });
  }

  it('through a store: the refusal names the run, whatever place holds the surrogate', async () => {
    const blob = fixture('several-two-pending-one-done').replace('"to":"ops@example.com"', '"to":"\\ud800"');
    const c = JSON.parse(blob);
    const entries = c.snapshot.context.history.map((e: unknown) => JSON.stringify(e));
    c.snapshot.context.history = [];
    const store = new MemoryStore();
    await store.save(
      'fx-2',
      { status: 'awaiting_approval', head: JSON.stringify(c), from: 0, append: entries, pendingCalls: [] },
      0,
    );
    const error = await Agent.load(store, 'fx-2', { policy: sequence(), tools: [] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckpointError);
    expect(error).toMatchObject({ runId: 'fx-2', message: `Agent.load: run "fx-2": ${cannotWriteBack}` });
  });
});

describe('__proto__ keys in the calls of a step', () => {
  it('are kept as data: the ids still name the calls, the blob round-trips, the tool gets the key as data', async () => {
    const args = JSON.parse('{"__proto__":{"dryRun":true},"to":"x"}');
    const send = recorder('send', { sideEffect: true, needsApproval: (a: { dryRun?: boolean }) => !a.dryRun });
    const policy = sequence(
      {
        calls: [
          { tool: 'send', args },
          { tool: 'send', args: { to: 'y' } },
        ],
      },
      { final: 1 },
    );
    const agent = new Agent({ runId: 'r', policy, tools: [send.tool] });
    expect(await agent.start('go')).toBe('awaiting_approval');
    const blob = agent.checkpoint();
    const run = decodeCheckpoint(blob);
    expect(Object.keys(run.context.calls[0]!.args)).toEqual(['__proto__', 'to']);
    const again = Agent.resume(blob, { policy, tools: [send.tool] });
    expect(again.checkpoint()).toBe(blob);
    const [first] = again.state.pendingCalls;
    expect(Object.getPrototypeOf(first!.args)).toBe(Object.prototype);
    expect(Object.keys(first!.args)).toEqual(['__proto__', 'to']);
    await again.decide(Object.fromEntries(again.state.pendingCalls.map((p) => [p.id, { approve: true as const }])));
    expect(again.status).toBe('done');
    const [call] = send.calls;
    expect(Object.keys(call!.args)).toEqual(['__proto__', 'to']);
    expect(call!.args.dryRun).toBeUndefined();
  });

  it('a __proto__ key added under an id made without it is refused', async () => {
    const { agent } = await twoSends();
    const blob = agent.checkpoint().replace('"args":{"to":"x"}', '"args":{"__proto__":{"dryRun":true},"to":"x"}');
    const error = refusal(blob);
    expect(error.path).toBe('snapshot.context.calls.0.id');
  });
});

describe('numbers and shapes a hand-made blob can hold', () => {
  it('a huge number in a call is refused at its path', () => {
    const error = refusal(fixture('awaiting-approval').replace('"attempt":1', '"attempt":1e400'));
    expect(error.path).toBe('snapshot.context.calls.0.attempt');
  });

  it('a fractional index, a zero step and a negative attempt are refused at their paths', () => {
    const blob = fixture('several-two-pending-one-done');
    expect(refusal(blob.replace('"index":2', '"index":1.5')).path).toBe('snapshot.context.calls.1.index');
    expect(refusal(blob.replace('"step":1,"tool":"lookup"', '"step":0,"tool":"lookup"')).path).toBe(
      'snapshot.context.calls.0.step',
    );
    expect(refusal(blob.replace('"attempt":1', '"attempt":-1')).path).toBe('snapshot.context.calls.0.attempt');
  });

  it('a request time that is no time is refused at its path', () => {
    const error = refusal(
      fixture('awaiting-approval').replace('"requestedAt":"2026-12-01T09:00:00.000Z"', '"requestedAt":"soon"'),
    );
    expect(error.path).toBe('snapshot.context.calls.0.requestedAt');
  });
});
