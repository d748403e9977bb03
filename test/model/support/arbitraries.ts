/**
 * The command arbitraries of the fast-check suite. They reach what simple paths miss: loops from
 * approval back to running, long runs against every budget, steps of up to four calls mixing
 * pure calls, approvals, rule denials and unknown tools, decisions on any subset of the pending
 * calls (edited, standing, reordered), each call's own expiry, crashes at any moment (mid policy
 * call, mid tool call between the calls of a step, while waiting for a human), limits changed at
 * resume, and the mistakes a caller can make.
 */
import fc from 'fast-check';
import {
  ApprovalExpiredError,
  EditRejectedError,
  NoPendingApprovalError,
  OptionsError,
  RunStateError,
  StaleApprovalError,
} from '../../../src/errors.js';
import type { CallSpec, Move, Pick, PolicySpec, ToolSpec } from './alphabet.js';
import { isDeciding, isExecuting, TTL_MS } from './alphabet.js';
import {
  ExtendCommand,
  isFinal,
  MistakeCommand,
  type Model,
  MoveCommand,
  type RunSetup,
  StandingStepCommand,
  state,
  status,
} from './commands.js';
import { refusesEdit } from './human.js';
import { activeLeft, isOpen, pendingOf, runningOf, toolDeadline } from './model-events.js';
import { asksAgainAfterCrash, type EditRefusal, VERIFY_ANSWERS } from './tools.js';
import type { World } from './world.js';

const callSpec: fc.Arbitrary<CallSpec> = fc.record({
  tool: fc.constantFrom('lookup', 'send', 'charge', 'wipe', 'unknown'),
  variant: fc.integer({ min: 0, max: 5 }),
  id: fc.boolean(),
});

const policySpec: fc.Arbitrary<PolicySpec> = fc
  .record({
    // A final answer ends the run: rare, so runs get long. (fast-check biases towards the first
    // of a oneof and of a constantFrom: a final comes last.)
    kind: fc.oneof(
      { weight: 16, arbitrary: fc.constant('call' as const) },
      { weight: 20, arbitrary: fc.constant('calls' as const) },
      { weight: 8, arbitrary: fc.constantFrom('malformed' as const, 'throws' as const) },
      { weight: 1, arbitrary: fc.constant('final' as const) },
    ),
    calls: fc.array(callSpec, { minLength: 1, maxLength: 4 }),
    text: fc.boolean(),
    elapsedMs: fc.integer({ min: 0, max: 30 }),
    usage: fc.option(
      fc.record({
        inputTokens: fc.integer({ min: 0, max: 40 }),
        outputTokens: fc.integer({ min: 0, max: 40 }),
        // Whole micro-dollars, as a policy that knows its cost reports it; now and then left out
        // (an unknown cost: under a cost budget the run must stop), rarely, so runs get long.
        costUsd: fc.oneof(
          { weight: 12, arbitrary: fc.integer({ min: 0, max: 150_000 }).map((micro) => micro / 1e6) },
          { weight: 1, arbitrary: fc.constant(undefined) },
        ),
      }),
      { nil: null },
    ),
    variant: fc.integer({ min: 0, max: 8 }),
    // Now and then every call of a step names one tool: several calls of it under one standing approval.
    oneTool: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  })
  .map(({ oneTool, ...s }) => {
    const calls = oneTool ? s.calls.map((c) => ({ ...c, tool: (s.calls[0] as CallSpec).tool })) : s.calls;
    return {
      ...s,
      calls: s.kind === 'call' ? calls.slice(0, 1) : s.kind === 'calls' ? calls : [],
      text: s.text && (s.kind === 'call' || s.kind === 'calls'),
    };
  });

const verifyAnswer = fc.constantFrom(...VERIFY_ANSWERS);

const toolSpec: fc.Arbitrary<ToolSpec> = fc.record({
  kind: fc.constantFrom('result', 'result', 'throw', 'timeout', 'nonjson'),
  elapsedMs: fc.integer({ min: 0, max: 20 }),
  variant: fc.integer({ min: 0, max: 5 }),
  // What a tool with `verify` answers if this call times out.
  verify: verifyAnswer,
});

const pick: fc.Arbitrary<Pick> = fc.record({
  at: fc.nat(3),
  approve: fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  edit: fc.option(fc.nat(3), { nil: undefined, freq: 3 }),
  // Standing approvals often enough that they meet edits, and later calls of their tool in a step.
  always: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
});

const awaiting = (m: Readonly<Model>) => status(m) === 'awaiting_approval';
const quiet = (m: Readonly<Model>) => status(m) !== 'running';
const pending = (m: Readonly<Model>) => pendingOf(m.snapshot.context);
const someOpen = (m: Readonly<Model>) => awaiting(m) && pending(m).some((p) => isOpen(p, m.now));
const someExpired = (m: Readonly<Model>) => awaiting(m) && pending(m).some((p) => !isOpen(p, m.now));
const sideEffectInFlight = (m: Readonly<Model>) => {
  const running = runningOf(m.snapshot.context);
  return isExecuting(state(m)) && running !== undefined && asksAgainAfterCrash(running.tool);
};
const editRefused = (why: EditRefusal) => (m: Readonly<Model>) =>
  awaiting(m) && pending(m).some((p) => isOpen(p, m.now) && refusesEdit(p, why));
/** Pending calls with different deadlines: `expire(first)` then expires one among several. */
const deadlinesDiffer = (m: Readonly<Model>) => awaiting(m) && new Set(pending(m).map((p) => p.expiresAt)).size > 1;

/** The command arbitraries. Policy and tool outcomes come often: runs get long. */
export function commandArbitraries(): fc.Arbitrary<fc.AsyncCommand<Model, World>>[] {
  const policy = policySpec.map((spec) => new MoveCommand({ kind: 'policy', spec }, (m) => isDeciding(state(m))));
  const tool = toolSpec.map((spec) => new MoveCommand({ kind: 'tool', spec }, (m) => isExecuting(state(m))));
  // Once a tool has a standing approval: a step of several calls of it, all covered by that one grant.
  const standingStep = fc
    .tuple(
      fc.array(fc.record({ variant: fc.integer({ min: 0, max: 5 }), id: fc.boolean() }), {
        minLength: 2,
        maxLength: 3,
      }),
      policySpec,
    )
    .map(
      ([calls, spec]) =>
        new StandingStepCommand({ ...spec, kind: 'calls', calls: calls.map((c) => ({ ...c, tool: 'send' })) }),
    );
  const move = (mv: Move, when: (m: Readonly<Model>) => boolean) => fc.constant(new MoveCommand(mv, when));
  const seed = (kind: 'approve' | 'deny' | 'approveLate') =>
    fc
      .option(fc.nat(3), { nil: undefined })
      .map((p) => new MoveCommand({ kind, ...(p === undefined ? {} : { pick: p }) }, awaiting));
  const decide = fc
    .record({ picks: fc.array(pick, { minLength: 1, maxLength: 3 }), reverse: fc.boolean() })
    .map(({ picks, reverse }) => new MoveCommand({ kind: 'decide', picks, reverse }, someOpen));
  const crashAfter = (when: (m: Readonly<Model>) => boolean) =>
    fc
      .integer({ min: 1, max: 40 })
      .map(
        (afterMs) =>
          new MoveCommand(
            { kind: 'crash', afterMs },
            (m) => when(m) && afterMs < toolDeadline(activeLeft(m.snapshot.context)).ms,
          ),
      );
  const wait = fc
    .integer({ min: 1, max: 3 })
    .map((n) => new MoveCommand({ kind: 'wait', ms: n === 3 ? TTL_MS : n * 20_000 }, quiet));
  const times = <T>(n: number, arb: T): T[] => Array.from({ length: n }, () => arb);
  const mistake = (
    mv: ConstructorParameters<typeof MistakeCommand>[0],
    when: (m: Readonly<Model>) => boolean,
    error: ConstructorParameters<typeof MistakeCommand>[2],
  ) => fc.constant(new MistakeCommand(mv, when, error));
  // fc.commands picks uniformly among these and skips those whose check() fails: the repeats
  // are weights, so that runs get long (most commands apply only in one status).
  return [
    ...times(4, fc.constant(new MoveCommand({ kind: 'start' }, (m) => status(m) === 'idle'))),
    ...times(16, policy),
    ...times(4, standingStep),
    ...times(12, tool),
    ...times(3, seed('approve')),
    ...times(2, seed('deny')),
    seed('approveLate'),
    ...times(6, decide),
    ...times(
      2,
      move({ kind: 'run' }, (m) => status(m) !== 'idle' && !isFinal(m)),
    ),
    // The user's next message: a conversation goes on from an answer or a budget's stop.
    ...times(
      3,
      move({ kind: 'send' }, (m) => status(m) === 'done' || status(m) === 'budget_exhausted'),
    ),
    // Weighted up since calls take effect in their order: fewer ways lead to calls of one step
    // with different deadlines (a side effect asked again after a crash, beside a sibling still pending).
    ...times(5, move({ kind: 'expire', first: true }, awaiting)),
    // Expiry of one call among several: weighted up where the deadlines already differ, and where
    // a side effect in flight beside a pending sibling is about to be asked again (a later deadline).
    ...times(10, move({ kind: 'expire', first: true }, deadlinesDiffer)),
    // Approving only the first of several pending calls: it runs while the others wait, and a crash
    // in it (below) asks it again with a deadline later than theirs.
    ...times(
      4,
      move(
        { kind: 'decide', picks: [{ at: 0, approve: true }], reverse: false },
        (m) => someOpen(m) && pending(m).length > 1 && asksAgainAfterCrash(pending(m)[0]?.tool ?? ''),
      ),
    ),
    ...times(
      8,
      crashAfter((m) => sideEffectInFlight(m) && pending(m).length > 0),
    ),
    // Time passes while a human thinks (so that calls of one step come to have different
    // deadlines, and expire one by one), in a slot shared with (rarer) cancelling, which ends the run.
    wait,
    fc.oneof({ weight: 12, arbitrary: wait }, { weight: 1, arbitrary: move({ kind: 'cancel' }, (m) => !isFinal(m)) }),
    // Past every deadline with calls still pending: a decision now names an expired call.
    move({ kind: 'wait', ms: TTL_MS }, (m) => awaiting(m) && m.snapshot.context.approvalTtlMs !== null),
    // Crashes at any moment: mid policy call, mid tool call (between the calls of a step, after
    // time passed in the call, with a side effect in flight), waiting for a human, after the end.
    fc.constant(new MoveCommand({ kind: 'crash' }, () => true)),
    fc.constant(new MoveCommand({ kind: 'crash' }, (m) => status(m) === 'running')),
    // A tool with `verify` in flight is asked at the resume: done, not done, or unknown.
    ...times(
      3,
      verifyAnswer.map((verify) => new MoveCommand({ kind: 'crash', verify }, sideEffectInFlight)),
    ),
    // A side effect asked again after time passed: its deadline is now later than its siblings'.
    crashAfter((m) => isExecuting(state(m))),
    ...times(3, crashAfter(sideEffectInFlight)),
    fc.integer({ min: 0, max: 12 }).map((maxSteps) => new MoveCommand({ kind: 'crash', maxSteps }, (m) => !isFinal(m))),
    // Resumed with a lower (or higher) cost budget, possibly below what is spent already.
    fc
      .integer({ min: 1, max: 1_000_000 })
      .map((micro) => new MoveCommand({ kind: 'crash', maxCostUsd: micro / 1e6 }, (m) => !isFinal(m))),
    ...times(
      2,
      fc
        .record({
          steps: fc.integer({ min: 0, max: 4 }),
          tokens: fc.integer({ min: 0, max: 200 }),
          ms: fc.integer({ min: 0, max: 200 }),
          micro: fc.integer({ min: 0, max: 500_000 }),
        })
        .map(({ steps, tokens, ms, micro }) => new ExtendCommand(steps, tokens, ms, micro)),
    ),
    fc.boolean().map((legacy) => new MistakeCommand({ kind: 'decideStale', legacy }, awaiting, StaleApprovalError)),
    ...times(2, mistake({ kind: 'decideExpired' }, someExpired, ApprovalExpiredError)),
    // An edit each check refuses (allowEdit or an unknown outcome, send's schema, send's rule),
    // half of them as standing approvals: `always` must pass nothing a single approval may not.
    ...times(
      5,
      fc
        .record({ why: fc.constantFrom<EditRefusal>('forbidden', 'schema', 'rule'), always: fc.boolean() })
        .map(
          ({ why, always }) =>
            new MistakeCommand({ kind: 'decideEditForbidden', why, always }, editRefused(why), EditRejectedError),
        ),
    ),
    mistake({ kind: 'decideUnnamed' }, (m) => awaiting(m) && pending(m).length > 1, OptionsError),
    fc
      .boolean()
      .map(
        (legacy) =>
          new MistakeCommand({ kind: 'decideNothing', legacy }, (m) => pending(m).length === 0, NoPendingApprovalError),
      ),
    mistake({ kind: 'startAgain' }, (m) => status(m) !== 'idle', RunStateError),
  ];
}

export const setupArbitrary: fc.Arbitrary<RunSetup> = fc.record({
  limits: fc.record({
    maxSteps: fc.integer({ min: 1, max: 20 }),
    // Every call's request is held at its estimate (a quarter token a character of the view):
    // enough room for runs to get long, small enough that the token budget stops many.
    maxTokens: fc.option(fc.integer({ min: 20, max: 2_000 }), { nil: null }),
    maxActiveMs: fc.option(fc.integer({ min: 30, max: 400 }), { nil: null }),
    maxCostUsd: fc.option(
      fc.integer({ min: 1, max: 3_000_000 }).map((micro) => micro / 1e6),
      { nil: null, freq: 2 },
    ),
  }),
  approvalTtlMs: fc.option(fc.constant(TTL_MS), { nil: null }),
});
