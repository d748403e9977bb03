/**
 * `checkInvariants` and `recordEffects` of tollgate/testing: clean runs pass, each invariant
 * bites on a run that breaks it (a tampered checkpoint, a forged tool call), and the kit finds
 * the two planted bugs of a user-style agent (a rule that lets a forbidden edit through, an
 * "idempotent" tool that ignores its key).
 */
import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent.js';
import { MemoryStore } from '../../src/stores/memory.js';
import {
  checkInvariants,
  crashableStore,
  type Effect,
  recordEffects,
  scriptedPolicy,
} from '../../src/testing/index.js';
import type { Tool } from '../../src/types.js';
import { until } from '../support/helpers.js';

/** A fake payment provider: the refunds that landed, by idempotency key. */
class Bank {
  readonly landed: string[] = [];
  refund(key: string, dedupe: boolean): { refunded: true } {
    if (!dedupe || !this.landed.includes(key)) this.landed.push(key);
    return { refunded: true };
  }
}

const LIMIT = 50_000;

function refundTool(bank: Bank, rule: Tool['needsApproval'], options: Partial<Tool> = {}): Tool {
  return {
    name: 'refund',
    sideEffect: true,
    needsApproval: rule,
    fn: ({ cents }: { cents: number }, key: string) => ({ ...bank.refund(key, true), cents }),
    ...options,
  };
}

/** The rule as written: over the limit is denied, anything else asks a human. */
const rule = ({ cents }: { cents: number }) => (cents > LIMIT ? { deny: 'over the refund limit' } : true);
const lookup: Tool = { name: 'lookup', fn: () => ({ cents: 12_000 }) };

/** A run with a lookup, an approved refund, a denied one, an edited one and a standing grant. */
async function cleanRun() {
  const bank = new Bank();
  const recorded = recordEffects([lookup, refundTool(bank, rule)]);
  const agent = new Agent({
    runId: 'clean',
    tools: recorded.tools,
    policy: scriptedPolicy([
      { tool: 'lookup', args: {} },
      {
        calls: [
          { tool: 'refund', args: { cents: 100 } },
          { tool: 'refund', args: { cents: 200 } },
        ],
      },
      { tool: 'refund', args: { cents: 300 } },
      { tool: 'refund', args: { cents: 400 } },
      { tool: 'refund', args: { cents: 500 } },
      { final: 'done' },
    ]),
  });
  expect(await agent.start('refund')).toBe('awaiting_approval');
  const [first, second] = agent.state.pendingCalls;
  await agent.decide({
    [first?.id as string]: { approve: true },
    [second?.id as string]: { approve: false, note: 'no' },
  });
  await agent.decide({ [agent.state.pending?.id as string]: { approve: true, args: { cents: 250 } } });
  expect(await agent.decide({ [agent.state.pending?.id as string]: { approve: true, always: true } })).toBe('done');
  return { agent, bank, recorded };
}

describe('checkInvariants', () => {
  it('finds nothing in a run that keeps every promise, from the agent, its checkpoint or the store', async () => {
    const { agent, bank, recorded } = await cleanRun();
    expect(recorded.effects.map((e) => [e.tool, e.key, e.args])).toEqual([
      ['lookup', 'clean:1', {}],
      ['refund', 'clean:2.1', { cents: 100 }],
      ['refund', 'clean:3', { cents: 250 }],
      ['refund', 'clean:4', { cents: 400 }],
      ['refund', 'clean:5', { cents: 500 }],
    ]);
    expect(await checkInvariants(agent, { ...recorded, applied: bank.landed })).toEqual([]);
    expect(await checkInvariants(agent.checkpoint())).toEqual([]);

    const store = new MemoryStore();
    const stored = new Agent({ runId: 's', store, tools: [lookup], policy: scriptedPolicy([{ tool: 'lookup' }]) });
    await stored.start('look');
    const run = await store.load('s');
    expect(run && (await checkInvariants(run, { tools: [lookup] }))).toEqual([]);
  });

  it('reads a run that cannot be read as a violation, never a throw', async () => {
    for (const bad of ['{', '{}', null, 42, { head: '{', entries: [] }] as never[]) {
      const [v] = await checkInvariants(bad);
      expect(v?.invariant).toBe('checkpoint');
    }
  });

  it('catches an approval moved to another call, a denial the model was not told, a forged standing grant', async () => {
    const { agent } = await cleanRun();
    const blob = agent.checkpoint();
    const checkpoint = JSON.parse(blob);
    const history = checkpoint.snapshot.context.history;
    // The approval of the refund of 100 (key clean:2.1), laid on the refund of 300 (key clean:3).
    const approved = history.findIndex((e: { approval?: { approved: boolean } }) => e.approval?.approved);
    const edited = history.findIndex((e: { approval?: { args?: unknown } }) => e.approval?.args);
    const moved = structuredClone(checkpoint);
    moved.snapshot.context.history[edited].approval = history[approved].approval;
    expect(await violations(moved)).toContainEqual({
      invariant: 'approval',
      message: expect.stringMatching(/^refund key clean:3 carries an approval of another call \(clean:2\.1#1@/),
      entries: [edited - 1, edited],
    });
    // The denial's observation replaced by a result: it ran although denied, and the model was not told.
    const denied = history.findIndex((e: { approval?: { approved: boolean } }) => e.approval?.approved === false);
    const ran = structuredClone(checkpoint);
    const { error: _e, ...entry } = history[denied];
    ran.snapshot.context.history[denied] = { ...entry, result: 'paid' };
    expect((await violations(ran)).map((v) => v.invariant).sort()).toEqual(['approval', 'denial']);
    // A call recorded under a standing grant that was never given.
    const standing = history.findIndex((e: { approval?: { standing?: string } }) => e.approval?.standing);
    const forged = structuredClone(checkpoint);
    forged.snapshot.context.history[standing].approval.standing = 'clean:9#1@00';
    expect((await violations(forged)).map((v) => v.message)).toEqual([
      expect.stringContaining('under a standing approval (clean:9#1@00) that no human gave'),
    ]);
  });

  it('holds the calls that ran to their tools: the rule asked again, edits the tool forbids', async () => {
    const { agent, recorded } = await cleanRun();
    const [, refund] = recorded.tools;
    // The same record, judged by a stricter rule and a tool that allows no edits.
    const stricter = {
      ...refund,
      needsApproval: ({ cents }: { cents: number }) => (cents > 240 ? { deny: 'no' } : true),
    };
    const found = await checkInvariants(agent, { tools: [lookup, { ...stricter, allowEdit: false } as Tool] });
    expect(found.map((v) => v.message)).toEqual([
      "refund key clean:3 ran with an approver's edit, and the tool allows none",
      'refund key clean:3 ran with {"cents":250}, which its rule denies (no)',
      'refund key clean:4 ran with {"cents":400}, which its rule denies (no)',
      'refund key clean:5 ran with {"cents":500}, which its rule denies (no)',
    ]);
    // A rule that now asks where the run ran the lookup without asking.
    const gated = await checkInvariants(agent, { tools: [{ ...lookup, sideEffect: true }, refund as Tool] });
    expect(gated.map((v) => v.message)).toEqual([
      "lookup key clean:1 ran without a human's approval, which its rule asks for",
    ]);
  });

  it('asks a rule with the history the run asked it with: the entries before the call', async () => {
    // The first refund of a run runs at once; any later one needs a human.
    const later: Tool = {
      name: 'refund',
      sideEffect: true,
      needsApproval: (_args, ctx) =>
        ctx.history.some((e) => e.role === 'assistant' && 'tool' in e && e.tool === 'refund'),
      fn: () => 'refunded',
    };
    const recorded = recordEffects([later]);
    const agent = new Agent({
      tools: recorded.tools,
      policy: scriptedPolicy([{ tool: 'refund', args: { n: 1 } }, { tool: 'refund', args: { n: 2 } }, { final: 'ok' }]),
    });
    expect(await agent.start('refund twice')).toBe('awaiting_approval');
    expect(await agent.decide(true)).toBe('done');
    expect(recorded.effects.map((e) => e.approvedCallId === null)).toEqual([true, false]);
    expect(await checkInvariants(agent, recorded)).toEqual([]);
  });

  it('holds recorded tool calls to the run: a call it never made, an approval it never gave, a start too many', async () => {
    const { agent, recorded } = await cleanRun();
    const at = (i: number) => recorded.effects[i] as Effect;
    const forged: Effect[] = [
      { ...at(1), key: 'clean:7' },
      { ...at(2), approvedCallId: null },
      { ...at(2), approvedCallId: at(1).approvedCallId },
      at(4),
    ];
    const found = await checkInvariants(agent, { tools: recorded.tools, effects: [...recorded.effects, ...forged] });
    expect(found.map((v) => `${v.invariant}: ${v.message}`)).toEqual([
      'approval: refund was called with key clean:7, which is no call of refund in the run',
      'approval: refund key clean:3 ran without an approval, and its tool needs one',
      expect.stringMatching(/^approval: refund key clean:3 ran under the approval of another call \(clean:2\.1#1@/),
      expect.stringMatching(/^approval: refund key clean:3 ran under clean:2\.1#1@\w+, which the run does not record/),
      // Counted per approval: the starts of clean:3 under other approvals are the violations above.
      expect.stringMatching(
        /^once: refund key clean:5 was started 2 times under one approval \(clean:5#1@\w+\); it is a side effect, not idempotent$/,
      ),
    ]);
  });

  it("holds the budgets: the run's own, or the ones the test names", async () => {
    const { agent } = await cleanRun();
    expect(await checkInvariants(agent, { limits: { maxSteps: 5 } })).toEqual([
      { invariant: 'budget', message: 'the run spent 6 steps, more than its budget of 5', entries: [] },
    ]);
    const over = JSON.parse(agent.checkpoint());
    over.snapshot.context.usage = { inputTokens: 700, outputTokens: 400, costUsd: 0.02 };
    over.snapshot.context.limits = { ...over.snapshot.context.limits, maxTokens: 1_000, maxCostUsd: 0.01 };
    expect((await violations(over)).map((v) => v.message)).toEqual([
      'the run spent 1100 tokens, more than its budget of 1000',
      'the run spent 0.02 US dollars, more than its budget of 0.01',
    ]);
  });

  it('catches a history whose entries do not pair, and a step count the history does not show', async () => {
    const { agent } = await cleanRun();
    const checkpoint = JSON.parse(agent.checkpoint());
    const swapped = structuredClone(checkpoint);
    const h = swapped.snapshot.context.history;
    [h[4], h[5]] = [h[5], h[4]];
    expect(await violations(swapped)).toEqual([
      { invariant: 'history', message: expect.stringContaining('does not answer call 1 of history[3]'), entries: [4] },
    ]);
    const counted = structuredClone(checkpoint);
    counted.snapshot.context.steps = 7;
    counted.snapshot.context.limits.maxSteps = 8;
    expect(await violations(counted)).toEqual([
      { invariant: 'history', message: 'the history holds 6 policy answers, the run counts 7 steps', entries: [] },
    ]);
  });
});

/** The violations of a checkpoint changed by hand (still one the codec reads). */
async function violations(checkpoint: unknown) {
  const { encodeCheckpoint, decodeCheckpoint } = await import('../../src/checkpoint/index.js');
  return checkInvariants(encodeCheckpoint(decodeCheckpoint(JSON.stringify(checkpoint))));
}

describe('the kit finds the bugs of a user-style agent', () => {
  it('a rule that lets a forbidden edit through: found by the spec the test writes apart from the rule', async () => {
    const bank = new Bank();
    // The bug: the limit is checked on the model's request only (an edit is judged by the same rule,
    // and this rule reads a field the edit leaves out).
    const buggy = ({ cents, requested }: { cents: number; requested?: number }) =>
      (requested ?? cents) > LIMIT ? { deny: 'over the refund limit' } : true;
    const tools = [refundTool(bank, buggy)];
    const agent = new Agent({
      runId: 'edit',
      tools,
      policy: scriptedPolicy([{ tool: 'refund', args: { cents: 100, requested: 100 } }]),
    });
    expect(await agent.start('refund')).toBe('awaiting_approval');
    await agent.decide({
      [agent.state.pending?.id as string]: { approve: true, args: { cents: 90_000, requested: 100 } },
    });
    const forbidden = ({ tool, args }: { tool: string; args: Record<string, unknown> }) =>
      tool === 'refund' && Number(args.cents) > LIMIT && `a refund over ${LIMIT} cents`;
    expect(await checkInvariants(agent, { tools, forbidden })).toEqual([
      {
        invariant: 'forbidden',
        message: `refund ran with {"cents":90000,"requested":100}: a refund over ${LIMIT} cents`,
        entries: [1, 2],
      },
    ]);
    // With the rule fixed, the runtime refuses the edit and the run keeps the promise.
    const fixed = [refundTool(new Bank(), rule)];
    const again = new Agent({
      runId: 'edit',
      tools: fixed,
      policy: scriptedPolicy([{ tool: 'refund', args: { cents: 100 } }]),
    });
    await again.start('refund');
    await expect(
      again.decide({ [again.state.pending?.id as string]: { approve: true, args: { cents: 90_000 } } }),
    ).rejects.toThrow(/the tool's rule denies these arguments/);
    expect(await checkInvariants(again, { tools: fixed, forbidden })).toEqual([]);
  });

  it('an "idempotent" tool that ignores its key: found after a crash mid-call, from what landed downstream', async () => {
    for (const honest of [false, true]) {
      const bank = new Bank();
      const store = new MemoryStore();
      const first = crashableStore(store);
      let calls = 0;
      const refund: Tool = {
        name: 'refund',
        idempotent: true,
        fn: ({ cents }: { cents: number }, key: string) => {
          bank.refund(key, honest);
          if (++calls > 1) return { cents };
          first.crash(); // the process dies after the effect, before its result is saved
          return new Promise(() => {});
        },
      };
      const recorded = recordEffects([refund]);
      const policy = scriptedPolicy([{ tool: 'refund', args: { cents: 100 } }, { final: 'ok' }]);
      void new Agent({ policy, tools: recorded.tools, store: first.store, runId: 'dup', leaseMs: 60 })
        .start('refund')
        .catch(() => {});
      await until(() => calls === 1);
      const second = await Agent.load(store, 'dup', { policy, tools: recorded.tools, leaseWaitMs: 2_000 });
      expect(await second.run()).toBe('done');
      expect(recorded.effects.map((e) => e.key)).toEqual(['dup:1', 'dup:1']); // called again: it is idempotent
      const found = await checkInvariants(second, { ...recorded, applied: bank.landed });
      expect(found).toEqual(
        honest
          ? []
          : [{ invariant: 'once', message: 'the call with key dup:1 (refund) took effect 2 times', entries: [1, 2] }],
      );
    }
  });
});
