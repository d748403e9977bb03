/**
 * Calls side by side in the formal model: every simple path (@xstate/graph) of the pure agent
 * machine through steps whose pure calls run as a batch — completions in every order, a timeout of
 * any one, a side effect between pure calls, the batch actor ending early — checked after every
 * move: a batch holds only calls that may run side by side, a side effect runs only alone and
 * approved, the step's record keeps the calls' order whatever order they ended in, and the state
 * after any completion is a checkpoint that decodes and restores as it was (a crash between any
 * two completions resumes from there).
 */
import { isDeepStrictEqual } from 'node:util';
import { getSimplePaths } from '@xstate/graph';
import { describe, expect, it } from 'vitest';
import { type AnyMachineSnapshot, createActor, initialTransition, transition } from 'xstate';
import { agentMachine, type MachineEvent } from '../../machines/index.js';
import type { AgentInput, ClassifiedCall, HistoryEntry, StepCall } from '../../machines/types.js';
import { decodeCheckpoint, encodeCheckpoint } from '../../src/checkpoint/index.js';

const input: AgentInput = {
  runId: 'b',
  limits: { maxSteps: 3, maxTokens: null, maxActiveMs: null, maxCostUsd: null },
  approvalTtlMs: null,
};
const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms).toISOString();
const look = (q: string): ClassifiedCall => ({
  tool: 'look',
  args: { q },
  toolCallId: null,
  verdict: { kind: 'run', concurrent: true },
});
const pay: ClassifiedCall = { tool: 'pay', args: { cents: 5 }, toolCallId: null, verdict: { kind: 'ask' } };

/** The policy's two kinds of step: three pure calls; or two pure calls, a payment, and one more. */
const STEPS: Record<string, ClassifiedCall[]> = {
  three: [look('a'), look('b'), look('c')],
  mixed: [look('a'), look('b'), pay, look('c')],
};

type Snapshot = ReturnType<typeof initialTransition<typeof agentMachine>>[0];
interface PathState {
  snapshot: Snapshot;
  now: number;
}
interface PathEvent {
  type: string;
  event: MachineEvent;
}

const running = (s: Snapshot) => s.context.calls.filter((c) => c.state === 'running');
const phase = (s: Snapshot) =>
  typeof s.value === 'object' ? (s.value as { running: string }).running : (s.value as string);

/** What may happen next, in each state. */
function eventsFor({ snapshot: s, now }: PathState): PathEvent[] {
  const events: PathEvent[] = [];
  const out = (type: string, event: MachineEvent) => events.push({ type, event });
  if (s.value === 'idle') out('START', { type: 'START', goal: 'g' });
  if (phase(s) === 'deciding') {
    if (s.context.steps === 0) {
      for (const [name, calls] of Object.entries(STEPS)) {
        out(`policy:${name}`, {
          type: 'xstate.done.actor.policy',
          output: { type: 'calls', calls, text: null, usage: null, elapsedMs: 0, at: at(now) },
        });
      }
    } else {
      out('policy:final', {
        type: 'xstate.done.actor.policy',
        output: { type: 'final', final: 'ok', usage: null, elapsedMs: 0, at: at(now) },
      });
    }
  }
  if (phase(s) === 'batching') {
    for (const call of running(s)) {
      out(`done:${call.key}`, {
        type: 'CALL_DONE',
        key: call.key,
        output: { type: 'result', result: `found ${call.args.q}`, elapsedMs: 1, at: at(now) },
      });
      out(`timeout:${call.key}`, {
        type: 'CALL_DONE',
        key: call.key,
        output: { type: 'error', error: 'TimeoutError: tool look timed out', elapsedMs: 1, at: at(now) },
      });
    }
    // The batch actor ends once it reported every call; ending before is a fault the machine records.
    out(running(s).length === 0 ? 'tools:done' : 'tools:done-early', {
      type: 'xstate.done.actor.tools',
      output: null,
    });
  }
  if (phase(s) === 'executing') {
    out('tool:done', {
      type: 'xstate.done.actor.tool',
      output: { type: 'result', result: 'paid', elapsedMs: 1, at: at(now) },
    });
  }
  if (s.value === 'awaiting_approval') {
    const [pending] = s.context.calls.filter((c) => c.state === 'pending');
    if (pending) {
      out('approve', {
        type: 'DECIDE',
        decisions: [{ callId: pending.id, approve: true, note: '' }],
        by: 'h',
        at: at(now),
      });
    }
  }
  return events;
}

const logic = {
  transition: (s: PathState, e: PathEvent): PathState => ({
    snapshot: transition(agentMachine, s.snapshot, e.event)[0] as Snapshot,
    now: s.now + 1,
  }),
  getInitialSnapshot: (): PathState => ({ snapshot: initialTransition(agentMachine, input)[0] as Snapshot, now: 0 }),
};

/** A state by what the rules read: the phase, each call's state and outcome, the history's length. */
const key = ({ snapshot: s }: PathState) =>
  JSON.stringify([
    s.value,
    s.context.calls.map((c) => [c.key, c.state, c.done && ('error' in c.done ? 'e' : 'r')]),
    s.context.history.length,
  ]);

const paths = getSimplePaths(logic as never, {
  events: eventsFor as never,
  serializeState: key as never,
}) as unknown as { steps: { state: PathState; event: PathEvent }[] }[];

/** The problems with one state on a path (empty: none). */
function problems(s: Snapshot, before: Snapshot | null): string[] {
  const found: string[] = [];
  const calls: StepCall[] = s.context.calls;
  if (phase(s) === 'batching') {
    for (const c of running(s)) {
      if (!c.concurrent || c.approval !== null || c.tool !== 'look') found.push(`${c.key} runs in a batch`);
    }
  }
  for (const c of calls) {
    if (c.tool === 'pay' && c.state === 'running' && (phase(s) !== 'executing' || !c.approval?.approved)) {
      found.push('the payment runs unapproved or side by side');
    }
    // Calls take effect in order: none runs while an earlier one waits.
    const earlier = calls.slice(0, c.index - 1);
    if (c.state === 'running' && earlier.some((e) => e.state === 'queued' || e.state === 'pending')) {
      found.push(`${c.key} runs before an earlier call`);
    }
  }
  // The step's record: its tool entries in call order, each the call's outcome.
  if (before && s.context.history.length > before.context.history.length && before.context.calls.length > 0) {
    const added = s.context.history.slice(before.context.history.length) as HistoryEntry[];
    const ids = added.filter((e) => e.role === 'tool').map((e) => (e as { id?: string }).id);
    const expected = before.context.calls.map((c) => c.key);
    if (JSON.stringify(ids) !== JSON.stringify(expected)) found.push(`the step recorded ${ids} for ${expected}`);
  }
  // A crash here: the checkpoint decodes (its rules hold) and restores to this very state.
  if (s.status === 'active') {
    const persisted = agentMachine.getPersistedSnapshot(s as AnyMachineSnapshot as never);
    const blob = encodeCheckpoint(persisted);
    const decoded = decodeCheckpoint(blob);
    const restored = createActor(agentMachine, { snapshot: decoded as never, input: undefined as never }).getSnapshot();
    if (!isDeepStrictEqual(restored.context, s.context) || !isDeepStrictEqual(restored.value, s.value)) {
      found.push('the checkpoint does not restore the state');
    }
  }
  return found;
}

describe('calls side by side, every simple path of the machine', () => {
  it('takes every order of completion, with any one timed out, and the batch actor ending early', () => {
    const orders = new Set<string>();
    for (const p of paths) {
      const done = p.steps.filter((s) => s.event.type.startsWith('done:b:1.')).map((s) => s.event.type.slice(5));
      if (p.steps.some((s) => s.event.type === 'policy:three') && done.length === 3) orders.add(done.join(' '));
    }
    expect([...orders].sort()).toEqual([
      'b:1.1 b:1.2 b:1.3',
      'b:1.1 b:1.3 b:1.2',
      'b:1.2 b:1.1 b:1.3',
      'b:1.2 b:1.3 b:1.1',
      'b:1.3 b:1.1 b:1.2',
      'b:1.3 b:1.2 b:1.1',
    ]);
    const kinds = new Set(paths.flatMap((p) => p.steps.map((s) => s.event.type.split(':')[0])));
    for (const kind of ['START', 'policy', 'done', 'timeout', 'tools', 'approve', 'tool'])
      expect(kinds).toContain(kind);
    expect(paths.length).toBeGreaterThan(100);
  });

  it('holds the rules after every move of every path, and every state restores from its checkpoint', () => {
    let checked = 0;
    for (const p of paths) {
      let before: Snapshot | null = null;
      for (const step of p.steps) {
        const s = step.state.snapshot;
        const found = problems(s, before);
        if (found.length > 0) {
          throw new Error(`${p.steps.map((x) => x.event.type).join(' → ')}: ${found.join('; ')}`);
        }
        before = s;
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(500);
  });

  it('a batch that ends with calls unreported records each as an error, never drops it', () => {
    const early = paths.find((p) => p.steps.some((s) => s.event.type === 'tools:done-early'));
    expect(early).toBeDefined();
    const step = (early as (typeof paths)[number]).steps.find((s) => s.event.type === 'tools:done-early');
    const after = step?.state.snapshot as Snapshot;
    const outcomes = [...after.context.calls.map((c) => c.done), ...after.context.history];
    expect(outcomes.some((o) => o !== null && 'error' in o && /without an outcome/.test(String(o.error)))).toBe(true);
    expect(after.context.calls.filter((c) => c.state === 'running')).toEqual([]);
  });
});
