/**
 * `checkResumable` of tollgate/testing: the stored runs of an agent that have not ended, judged
 * against a new definition as the runtime would judge their calls when resumed — a tool gone, a
 * schema that rejects the arguments, a rule that now asks or denies — and a run this build cannot
 * read. Nothing runs, nothing is saved.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent } from '../../src/agent.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { checkResumable, scriptedPolicy } from '../../src/testing/index.js';
import type { Action, Tool } from '../../src/types.js';

const ran: string[] = [];
const refund = (rule: Tool['needsApproval'] = true, input?: Tool['input']): Tool => ({
  name: 'refund',
  sideEffect: true,
  needsApproval: rule,
  ...(input ? { input } : {}),
  fn: ({ cents }: { cents: number }) => {
    ran.push(`refund ${cents}`);
    return { refunded: cents };
  },
});
const lookup = (rule: Tool['needsApproval'] = false): Tool => ({
  name: 'lookup',
  needsApproval: rule,
  fn: () => {
    ran.push('lookup');
    return { cents: 1 };
  },
});

/** Runs of agent "payer": one awaiting approval, one with an approved (edited) call and a queued lookup behind a pending one, one done; and a run of another agent. */
async function stored() {
  const store = new MemoryStore();
  const start = async (runId: string, actions: Action[], agent = 'payer') => {
    const a = new Agent({ runId, store, agent, tools: [refund(), lookup()], policy: scriptedPolicy(actions) });
    await a.start('go');
    return a;
  };
  await start('waiting', [{ tool: 'refund', args: { cents: 300 } }]);
  const mixed = await start('mixed', [
    {
      calls: [
        { tool: 'refund', args: { cents: 100 } },
        { tool: 'lookup', args: {} },
        { tool: 'refund', args: { cents: 200 } },
      ],
    },
  ]);
  const [, second] = mixed.state.pendingCalls;
  // The second refund approved with an edit: it waits behind the first, still pending.
  expect(await mixed.decide({ [second?.id as string]: { approve: true, args: { cents: 90 } } })).toBe(
    'awaiting_approval',
  );
  const done = await start('done', [{ tool: 'refund', args: { cents: 5 } }, { final: 'ok' }]);
  await done.decide(true);
  await start('other', [{ tool: 'refund', args: { cents: 7 } }], 'someone-else');
  ran.length = 0;
  return store;
}

const summary = (problems: Awaited<ReturnType<typeof checkResumable>>['problems']) =>
  problems.map((p) => `${p.runId} ${p.call?.key ?? '-'} ${p.kind}`);

describe('checkResumable', () => {
  it('finds nothing under the same definition, and checks only the agent’s runs that have not ended', async () => {
    const store = await stored();
    expect(await checkResumable(store, { name: 'payer', tools: [refund(), lookup()] })).toEqual({
      checked: 2,
      problems: [],
    });
    // Without a name: every run that has not ended.
    expect((await checkResumable(store, { tools: [refund(), lookup()] })).checked).toBe(3);
    expect(ran).toEqual([]);
  });

  it('a tool gone: each call of it still to run', async () => {
    const store = await stored();
    const { problems } = await checkResumable(store, { name: 'payer', tools: [lookup()] });
    expect(summary(problems)).toEqual([
      'mixed mixed:1.1 tool-missing',
      'mixed mixed:1.3 tool-missing',
      'waiting waiting:1 tool-missing',
    ]);
    expect(problems[0]).toMatchObject({
      status: 'awaiting_approval',
      call: { tool: 'refund', state: 'pending' },
      message: 'the definition has no tool refund: the call would end as the error "unknown tool refund"',
    });
  });

  it('a schema that rejects the arguments, an approver’s edit included', async () => {
    const store = await stored();
    const atLeast150 = z.object({ cents: z.number().min(150) });
    const { problems } = await checkResumable(store, { name: 'payer', tools: [refund(true, atLeast150), lookup()] });
    expect(summary(problems)).toEqual(['mixed mixed:1.1 args-rejected', 'mixed mixed:1.3 args-rejected']);
    expect(problems[1]?.message).toMatch(/^the tool's schema rejects the call's edited arguments: /);
    expect(problems[1]?.call).toEqual({ key: 'mixed:1.3', tool: 'refund', state: 'queued' });
  });

  it('a rule that now denies a call awaiting a human or approved, and one that now asks for a call taken without', async () => {
    const store = await stored();
    const capped = refund(({ cents }: { cents: number }) =>
      cents > 250 || cents === 90 ? { deny: 'over the cap' } : true,
    );
    const { problems } = await checkResumable(store, { name: 'payer', tools: [capped, lookup(true)] });
    expect(summary(problems)).toEqual([
      'mixed mixed:1.2 needs-approval',
      'mixed mixed:1.3 rule-denies',
      'waiting waiting:1 rule-denies',
    ]);
    expect(problems.map((p) => p.message)).toEqual([
      "it needed no approval when it was taken; the tool's rule now asks for one: it would be refused, not run",
      "the tool's rule now denies it (over the cap), yet it is approved: it would still run",
      "the tool's rule now denies it (over the cap), yet it is awaiting a human: an approval would still run it",
    ]);
    expect(ran).toEqual([]);
  });

  it('a run this build cannot read is reported, and the others are still checked', async () => {
    const store = await stored();
    const good = await store.load('waiting');
    if (!good) throw new Error('no run');
    await store.save(
      'broken',
      {
        head: good.head.replace('"waiting"', '"broken"').replace(/"v":\d+/, '"v":99'),
        entries: good.entries,
        from: 0,
        append: good.entries,
        pendingCalls: [],
        agent: 'payer',
        status: 'running',
      } as never,
      0,
    );
    const { checked, problems } = await checkResumable(store, { name: 'payer', tools: [refund(), lookup()] });
    expect(checked).toBe(3);
    expect(problems).toEqual([
      expect.objectContaining({ runId: 'broken', status: null, kind: 'checkpoint', call: null }),
    ]);
    expect(problems[0]?.message).toMatch(/^this build cannot read the run: /);
  });
});
