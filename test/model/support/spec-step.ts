/**
 * The world's own record of the step in progress: the calls the policy asked for (as the test's
 * policy returned them) and what the contract says becomes of each, updated from what the world
 * sees (the human's decisions, the tools' calls and answers, crashes, time), never from the
 * machine. Each call is its own unit (docs/architecture.md, "Several calls in a step"): calls that
 * need nobody run at once in call order, the others wait for a human, each with its own expiry
 * and crash rule, and the policy is asked again only when every call has an outcome. The oracle
 * compares the run with it after every move; the ledger checks each tool call against it.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Json, JsonObject } from '../../../machines/types.js';
import { RUN_ID } from './alphabet.js';
import type { LedgerData } from './ledger.js';
import { notRunError } from './model-events.js';
import { asksAgainAfterCrash, hasVerify, ruleOf, type VerifyAnswer, verifiedResult } from './tools.js';

/** An approval record as the contract says the call's tool entry must carry it. */
export interface SpecApproval {
  approved: boolean;
  by: string;
  note: string;
  at: string;
  /** The call id decided; null for a call covered by a standing approval until it runs (its own id). */
  callId: string | null;
  args?: JsonObject;
  always?: true;
  /** The id of the call whose approval stands for this one. */
  standing?: string;
}

export interface SpecCall {
  key: string;
  tool: string;
  /** The model's arguments. */
  args: JsonObject;
  /** What pairs it with its tool entry: the model's id, or the key. */
  pairId: string;
  modelId: boolean;
  verdict: 'run' | 'ask' | 'refuse';
  state: 'queued' | 'waiting' | 'running' | 'done';
  /** What the tool must receive: the approver's edit, or the model's arguments. */
  runArgs: JsonObject;
  attempt: number;
  /** Clock time the human was asked (while waiting). */
  requestedAt: number | null;
  /** In flight at a crash, not idempotent: it may or may not have taken effect. */
  unknown: boolean;
  approval: SpecApproval | null;
  /** The tool entry's outcome, once done. */
  body: { result: Json; verified?: true } | { error: string; outcome?: 'unknown' } | null;
}

export interface SpecStep {
  step: number;
  several: boolean;
  calls: SpecCall[];
}

/** The tool entries a step that just ended must have added (for the oracle, once). */
export interface FinishedStep {
  step: number;
  /** The step's calls as the model asked for them (its assistant entry must still say so). */
  asked: { id: string; tool: string; args: JsonObject }[];
  entries: Record<string, unknown>[];
  /** Ended by a cancel: only the calls that had their outcome are recorded. */
  cancelled: boolean;
}

const keyOf = (step: number, i: number, count: number) =>
  count === 1 ? `${RUN_ID}:${step}` : `${RUN_ID}:${step}.${i}`;

const budgetSpent = (d: LedgerData) => d.limits.maxActiveMs !== null && d.activeMs >= d.limits.maxActiveMs;
const expired = (d: LedgerData, call: SpecCall, at: number) =>
  d.ttlMs !== null && call.requestedAt !== null && at >= call.requestedAt + d.ttlMs;

/** The tool entry the contract says a finished call adds. */
function entryOf(step: SpecStep, call: SpecCall): Record<string, unknown> {
  return {
    role: 'tool',
    tool: call.tool,
    ...(step.several || call.modelId ? { id: call.pairId } : {}),
    ...call.body,
    ...(call.approval ? { approval: call.approval } : {}),
  };
}

function finish(d: LedgerData, cancelled: boolean): void {
  const step = d.step;
  if (!step) return;
  const done = step.calls.filter((c) => c.state === 'done');
  const asked = step.calls.map((c) => ({ id: c.pairId, tool: c.tool, args: c.args }));
  d.finished = { step: step.step, asked, entries: done.map((c) => entryOf(step, c)), cancelled };
  d.step = null;
}

/**
 * Moves the step on as far as the contract says it goes by itself: a queued call that the
 * spent active-time budget will never start ends as `not run`; once every call has its outcome
 * the step ends.
 */
export function settle(d: LedgerData): void {
  const step = d.step;
  if (!step || step.calls.some((c) => c.state === 'running')) return;
  for (const call of step.calls) {
    // Calls take effect in their order: nothing after a call that waits for a human starts.
    if (call.state === 'waiting') break;
    if (call.state !== 'queued') continue;
    if (!budgetSpent(d)) return;
    call.state = 'done';
    call.body = { error: notRunError(call.tool) };
  }
  if (step.calls.some((c) => c.state === 'waiting')) return;
  finish(d, false);
}

/** The policy answered step `step` with these calls at clock `now`. */
export function beginStep(
  d: LedgerData,
  step: number,
  calls: { tool: string; args: JsonObject; id: string | null }[],
  now: number,
): void {
  const spec: SpecStep = { step, several: calls.length > 1, calls: [] };
  for (const [i, c] of calls.entries()) {
    const key = keyOf(step, i + 1, calls.length);
    const rule = ruleOf(c.tool, c.args);
    const call: SpecCall = {
      key,
      tool: c.tool,
      args: c.args,
      pairId: c.id ?? key,
      modelId: c.id !== null,
      verdict: rule === null || typeof rule === 'object' ? 'refuse' : rule,
      state: 'queued',
      runArgs: c.args,
      attempt: 1,
      requestedAt: null,
      unknown: false,
      approval: null,
      body: null,
    };
    if (rule === null) {
      call.state = 'done';
      call.body = { error: `unknown tool ${c.tool}` };
    } else if (typeof rule === 'object') {
      call.state = 'done';
      call.body = { error: `denied by rule: ${rule.deny}` };
      d.ruleDenials.push(key);
    } else if (rule === 'ask') {
      const grant = d.standing[c.tool];
      if (grant) {
        const { by, note, at, callId } = grant;
        call.approval = { approved: true, by, note, at: new Date(at).toISOString(), callId: null, standing: callId };
      } else {
        call.state = 'waiting';
        call.requestedAt = now;
      }
    }
    spec.calls.push(call);
  }
  d.step = spec;
  settle(d);
}

/**
 * A tool's `fn` was called for `key`: it must be the call the contract runs next (the one in
 * flight again after a crash, or the first queued in call order), with the arguments it must
 * get. Returns the call, or null (with the violation recorded) when there is no such call.
 */
export function startCall(
  d: LedgerData,
  key: string,
  args: JsonObject,
  approvedCallId: string | null,
): SpecCall | null {
  const call = d.step?.calls.find((c) => c.key === key);
  if (!d.step || !call) {
    d.violations.push(`calls: a tool ran for key ${key}, which no call of the step in progress has`);
    return null;
  }
  const next = nextToRun(d.step);
  if (call.state === 'waiting' || call.state === 'done') {
    d.violations.push(
      `calls: ${call.tool} key ${key} ran while ${call.state === 'done' ? 'it had its outcome' : 'waiting for a human'}`,
    );
  } else if (next !== call) {
    d.violations.push(
      `calls: ${call.tool} key ${key} ran before ${next?.key ?? 'the call waiting for a human before it'} (calls run one at a time, in call order)`,
    );
  }
  if (budgetSpent(d)) d.violations.push(`inv3: ${call.tool} key ${key} started with the active-time budget spent`);
  if (!isDeepStrictEqual(args, call.runArgs)) {
    d.violations.push(
      `inv1: ${call.tool} key ${key} got ${JSON.stringify(args)}, the call to run is ${JSON.stringify(call.runArgs)}`,
    );
  }
  call.state = 'running';
  if (call.approval?.standing && call.approval.callId === null) call.approval.callId = approvedCallId;
  return call;
}

/** The call in flight for `key` ended with this observation. */
export function endCall(d: LedgerData, key: string, body: { result: Json; verified?: true } | { error: string }): void {
  const call = d.step?.calls.find((c) => c.key === key && c.state === 'running');
  if (!call) return; // startCall reported it
  call.state = 'done';
  call.body = body;
  settle(d);
}

/** A human decided these calls (by their keys), as the contract says each is taken. */
export function decideCalls(
  d: LedgerData,
  decisions: {
    key: string;
    callId: string;
    approve: boolean;
    note: string;
    by: string;
    at: number;
    args?: JsonObject;
    always?: boolean;
  }[],
): void {
  for (const dec of decisions) {
    const call = d.step?.calls.find((c) => c.key === dec.key);
    if (call?.state !== 'waiting')
      d.violations.push(
        `calls: the human was shown ${dec.key} as pending; the step record has it ${call?.state ?? 'absent'}`,
      );
  }
  // Taken in call order, whatever the order of the map (two standing grants for one tool in one
  // map: the later call's stands).
  for (const call of d.step?.calls ?? []) {
    const dec = decisions.find((x) => x.key === call.key);
    if (!dec || call.state !== 'waiting') continue;
    const approval: SpecApproval = {
      approved: dec.approve,
      by: dec.by,
      note: dec.note,
      at: new Date(dec.at).toISOString(),
      callId: dec.callId,
      ...(dec.approve && dec.args ? { args: dec.args } : {}),
      ...(dec.approve && dec.always ? { always: true as const } : {}),
    };
    const unknown = call.unknown ? { outcome: 'unknown' as const } : {};
    const late = expired(d, call, dec.at);
    call.approval = approval;
    call.requestedAt = null;
    if (late) {
      // Decided at or after its expiry: nothing runs, the model is told, with the late decision.
      call.state = 'done';
      call.body = { error: 'approval expired', ...unknown };
    } else if (!dec.approve) {
      call.state = 'done';
      call.body = { error: `denied by human: ${dec.note}`, ...unknown };
    } else {
      call.state = 'queued';
      call.runArgs = dec.args ?? call.args;
      if (dec.always) d.standing[call.tool] = { callId: dec.callId, by: dec.by, note: dec.note, at: dec.at };
    }
  }
  settle(d);
}

/** `run()` at `at`: every waiting call whose own expiry has passed ends as expired. */
export function expireCalls(d: LedgerData, at: number): void {
  for (const call of d.step?.calls ?? []) {
    if (call.state !== 'waiting' || !expired(d, call, at)) continue;
    call.state = 'done';
    call.requestedAt = null;
    call.body = { error: 'approval expired', ...(call.unknown ? { outcome: 'unknown' as const } : {}) };
  }
  settle(d);
}

/** A call goes back to a human, as a new request; `unknown`: its outcome is not known. */
function askAgain(d: LedgerData, call: SpecCall, now: number, unknown: boolean): void {
  call.state = 'waiting';
  call.attempt++;
  call.unknown = unknown;
  call.requestedAt = now;
  call.approval = null;
  call.runArgs = call.args;
  settle(d);
}

/**
 * The process died with a call in flight and a new one resumed at `now`: a non-idempotent side
 * effect goes back to a human (a new request, outcome unknown) — unless its tool's `verify`
 * (answering `verify`) says it happened (its result is recorded, verified) or did not (it runs
 * again while its approval is younger than the TTL, else a human is asked, the outcome known);
 * any other call runs again. Returns whether the call in flight runs again.
 */
export function crashCall(d: LedgerData, now: number, verify: VerifyAnswer = 'unknown'): boolean {
  const call = d.step?.calls.find((c) => c.state === 'running');
  if (!call) return false;
  if (!asksAgainAfterCrash(call.tool)) return true;
  const answer = hasVerify(call.tool) ? verify : 'unknown';
  if (answer === 'done') {
    endCall(d, call.key, { result: verifiedResult(call.key), verified: true });
    return false;
  }
  const young = call.approval === null || d.ttlMs === null || now < Date.parse(call.approval.at) + d.ttlMs;
  if (answer === 'notDone' && young) return true;
  askAgain(d, call, now, answer !== 'notDone');
  return false;
}

/**
 * The call in flight for `key` timed out: a tool with `verify` (answering `verify`) says whether
 * it happened. Done: its result, verified. Not done: the timeout stands (`timeout`). Unknown: a human.
 */
export function timedOut(
  d: LedgerData,
  key: string,
  verify: VerifyAnswer,
  timeout: { error: string },
  now: number,
): void {
  const call = d.step?.calls.find((c) => c.key === key && c.state === 'running');
  if (!call) return;
  if (!(asksAgainAfterCrash(call.tool) && hasVerify(call.tool))) {
    endCall(d, key, timeout);
    return;
  }
  if (verify === 'done') endCall(d, key, { result: verifiedResult(key), verified: true });
  else if (verify === 'notDone') endCall(d, key, timeout);
  else askAgain(d, call, now, true);
}

/** A cancel: the calls that had their outcome are recorded, the others never run. */
export function cancelStep(d: LedgerData): void {
  finish(d, true);
}

/**
 * The call in flight, or the one to run next: the step's first call without an outcome, when it
 * is queued. Calls take effect in their order: none starts while an earlier one waits for a human.
 */
function nextToRun(step: SpecStep): SpecCall | undefined {
  const first = step.calls.find((c) => c.state !== 'done');
  return first?.state === 'running' || first?.state === 'queued' ? first : undefined;
}

/** What the contract says must be happening now in the step. */
export type Expectation = { kind: 'none' } | { kind: 'run'; call: SpecCall } | { kind: 'await'; waiting: SpecCall[] };

export function expectation(d: LedgerData): Expectation {
  const step = d.step;
  if (!step) return { kind: 'none' };
  const next = nextToRun(step);
  if (next) return { kind: 'run', call: next };
  return { kind: 'await', waiting: step.calls.filter((c) => c.state === 'waiting') };
}
