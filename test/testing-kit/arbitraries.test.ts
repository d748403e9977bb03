/**
 * tollgate/testing/fast-check: each arbitrary makes every kind it promises, and a user-style
 * property built from them (a policy, its usage, tools that throw and hang, an approver) runs the
 * runtime through all of it with every invariant held.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent.js';
import {
  action,
  decision,
  hostileValue,
  play,
  type ToolOutcome,
  toolOutcome,
  usageReport,
} from '../../src/testing/arbitraries.js';
import { checkInvariants, recordEffects, scriptedPolicy } from '../../src/testing/index.js';
import type { Action, Tool } from '../../src/types.js';

const sample = <T>(arb: fc.Arbitrary<T>, n = 2_000) => fc.sample(arb, { seed: 7, numRuns: n });

/** The kind of an action, as the runtime will read it. */
function kindOf(a: Action): string {
  try {
    return shapeOf(a);
  } catch {
    return 'hostile'; // a Proxy that throws, a revoked one
  }
}

function shapeOf(a: Action): string {
  if (a === null || typeof a !== 'object' || Array.isArray(a)) return 'not an object';
  const o = a as Record<string, unknown>;
  if ('calls' in o) return 'calls';
  if ('tool' in o && 'final' in o) return 'both';
  if ('tool' in o) {
    if (o.tool === 'no_such_tool') return 'unknown tool';
    return o.args !== null && typeof o.args === 'object' && !Array.isArray(o.args) ? 'call' : 'bad args';
  }
  if ('final' in o) return 'final';
  return 'neither';
}

describe('the arbitraries', () => {
  const tools = [{ name: 'lookup' }, { name: 'refund' }];

  it('action makes calls of the tools, several calls with distinct ids, answers, and malformed actions', () => {
    const actions = sample(action({ tools, args: { refund: fc.record({ cents: fc.nat() }) } }));
    const kinds = new Set(actions.map(kindOf));
    for (const kind of ['call', 'calls', 'final', 'unknown tool', 'bad args', 'both', 'neither', 'not an object'])
      expect(kinds, kind).toContain(kind);
    for (const a of actions.filter((x) => kindOf(x) === 'calls')) {
      const ids = (a as { calls: { id?: string }[] }).calls.flatMap((c) => (c.id === undefined ? [] : [c.id]));
      expect(new Set(ids).size).toBe(ids.length);
    }
    const refunds = actions.filter((a) => kindOf(a) === 'call' && (a as { tool: string }).tool === 'refund');
    expect(refunds.every((a) => Number.isInteger((a as unknown as { args: { cents: number } }).args.cents))).toBe(true);
    // hostile: 0 leaves only well-formed actions
    expect(new Set(sample(action({ tools, hostile: 0 }), 500).map(kindOf))).toEqual(
      new Set(['call', 'calls', 'final', 'unknown tool']),
    );
    expect(() => action({ tools: [] })).toThrow(TypeError);
  });

  it('usageReport makes real, missing and hostile usage; decision and toolOutcome make every kind', () => {
    const inputs = sample(usageReport()).map((u) => {
      try {
        return u === undefined ? 'missing' : (u as { inputTokens?: unknown }).inputTokens;
      } catch {
        return 'hostile';
      }
    });
    expect(inputs).toContain('missing');
    expect(inputs.some((n) => typeof n === 'number' && Number.isSafeInteger(n))).toBe(true);
    expect(inputs.some((n) => Number.isNaN(n))).toBe(true);
    expect(inputs).toContain('hostile');
    const decisions = sample(decision({ edit: fc.record({ cents: fc.nat() }) }), 500);
    expect(decisions.some((d) => !d.approve)).toBe(true);
    expect(decisions.some((d) => d.approve && d.always)).toBe(true);
    expect(decisions.some((d) => d.approve && d.args)).toBe(true);
    expect(sample(decision(), 500).some((d) => d.approve && d.args)).toBe(false);
    expect(new Set(sample(toolOutcome(), 500).map((o) => o.kind))).toEqual(
      new Set(['result', 'throw', 'hang', 'hostile']),
    );
    expect(sample(hostileValue, 200).some((make) => typeof make() === 'bigint')).toBe(true);
  });

  it('play: a result is a copy, a throw throws, a hang ends when its signal aborts', async () => {
    const value = { a: [1] };
    const copy = play({ kind: 'result', value });
    expect(copy).toEqual(value);
    expect(copy).not.toBe(value);
    expect(() => play({ kind: 'throw', message: 'down' })).toThrow('down');
    const controller = new AbortController();
    const hang = play({ kind: 'hang' }, controller.signal) as Promise<unknown>;
    controller.abort(new Error('timed out'));
    await expect(hang).rejects.toThrow('timed out');
  });
});

describe('a property built from them holds every invariant', () => {
  it('policies, usage, tools that throw and hang, and an approver: no crash, no violation', async () => {
    const LIMIT = 5_000;
    const seen = new Map<string, number>();
    const see = (what: string) => seen.set(what, (seen.get(what) ?? 0) + 1);
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          action({
            tools: [{ name: 'lookup' }, { name: 'refund' }],
            args: { refund: fc.record({ cents: fc.nat(10_000) }) },
          }),
          {
            minLength: 1,
            maxLength: 5,
          },
        ),
        fc.array(toolOutcome(), { maxLength: 8 }),
        fc.array(decision({ edit: fc.record({ cents: fc.nat(10_000) }) }), { maxLength: 8 }),
        async (actions, outcomes, decisions) => {
          const queue: ToolOutcome[] = [...outcomes];
          const next = (signal: AbortSignal) => play(queue.shift() ?? { kind: 'result', value: 'ok' }, signal);
          const tools: Tool[] = [
            { name: 'lookup', timeoutMs: 20, fn: (_a, _k, ctx) => next(ctx.signal) },
            {
              name: 'refund',
              sideEffect: true,
              timeoutMs: 20,
              needsApproval: ({ cents }: { cents: unknown }) =>
                typeof cents === 'number' && cents > LIMIT ? { deny: 'over the limit' } : true,
              fn: (_a, _k, ctx) => next(ctx.signal),
            },
          ];
          const recorded = recordEffects(tools);
          const agent = new Agent({
            tools: recorded.tools,
            maxSteps: actions.length,
            maxTokens: 20_000,
            policyRetries: 0,
            policy: scriptedPolicy(actions),
          });
          let status = await agent.start('go');
          for (const d of decisions) {
            const pending = agent.state.pending;
            if (status !== 'awaiting_approval' || !pending) break;
            status = await agent
              .decide({ [pending.id]: d })
              .catch(() => agent.decide({ [pending.id]: { approve: false } }));
          }
          const forbidden = ({ tool, args }: { tool: string; args: Record<string, unknown> }) =>
            tool === 'refund' && Number(args.cents) > LIMIT && 'over the limit';
          expect(await checkInvariants(agent, { ...recorded, forbidden })).toEqual([]);
          for (const e of recorded.effects) see(`${e.tool} ran${e.approvedCallId ? ' approved' : ''}`);
          for (const entry of agent.state.history) {
            const error = 'error' in entry && typeof entry.error === 'string' ? entry.error : '';
            const kind =
              /^(denied by human|denied by rule|malformed action|unknown tool|invalid arguments|TimeoutError|Error)/.exec(
                error,
              );
            if (kind) see(kind[1] as string);
          }
          const used = agent.state.usage;
          expect(used.inputTokens + used.outputTokens).toBeLessThanOrEqual(20_000);
        },
      ),
      { seed: 20261206, numRuns: 60 },
    );
    // The runs went where the arbitraries promise: approved side effects, denials, bad actions, throws, hangs.
    for (const what of [
      'refund ran approved',
      'lookup ran',
      'denied by human',
      'denied by rule',
      'malformed action',
      'unknown tool',
      'TimeoutError',
      'Error',
    ])
      expect(seen.get(what), what).toBeGreaterThan(0);
  });
});
