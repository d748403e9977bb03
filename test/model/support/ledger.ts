/**
 * The ledger: what happened in the world outside the agent, written down by the test's own
 * policy, tools and human, never read from the agent. Invariants 1, 2, 3 and 7 are checked
 * against it, per call, so a bug that the machine and the model share (the model *is* the
 * machine) is still caught: the ledger does not take the machine's word for anything.
 */
import { isDeepStrictEqual } from 'node:util';
import type { HistoryEntry, JsonObject, Limits } from '../../../machines/types.js';
import { historyProblem } from '../../../src/testing/history-shape.js';
import { type Charged, noRoomWhy } from './budget-spec.js';
import { beginStep, type FinishedStep, type SpecStep, startCall } from './spec-step.js';
import { isIdempotent, isSideEffect, mayRunWith } from './tools.js';

/** A human's decision, as the human saw the pending call. */
export interface HumanDecision {
  callId: string;
  key: string;
  tool: string;
  /** The call's arguments as shown, and what the human approved it to run with (an edit). */
  args: JsonObject;
  runArgs: JsonObject;
  approved: boolean;
  always: boolean;
  /** Clock time of the decision and of the call's expiry (null: never expires). */
  at: number;
  expiresAt: number | null;
}

/** A standing approval a human gave (`always: true`). */
export interface Grant {
  callId: string;
  by: string;
  note: string;
  at: number;
}

/** One call of a tool's `fn`. */
export interface EffectCall {
  tool: string;
  key: string;
  args: JsonObject;
  approvedCallId: string | null;
  at: number;
  incarnation: number;
  /** For a deduplicating tool: whether this call took effect (first for its key). */
  applied: boolean;
}

export interface LedgerData {
  violations: string[];
  decisions: Record<string, HumanDecision>;
  /** The latest approval request id the human was shown for each key. */
  latestRequest: Record<string, string>;
  /** Keys a human denied (in time), with the time of the denial. */
  denied: Record<string, number>;
  /** Keys of calls an approval rule denied (nobody asked). */
  ruleDenials: string[];
  /** Standing approvals the human gave, by tool. */
  standing: Record<string, Grant>;
  effects: EffectCall[];
  /** Keys the deduplicating tool has applied. */
  applied: string[];
  /** Policy calls that returned an action (malformed ones included): step numbers. */
  completedSteps: number[];
  policyCalls: number;
  toolCalls: number;
  /** Tokens reported by completed policy calls; clock time spent in calls. */
  tokens: number;
  /**
   * Micro-dollars the completed policy calls reported; a call whose cost was unknown under a cost
   * budget counts as all the budget had left (the fail-closed rule of machines/budget.ts).
   */
  costMicro: number;
  activeMs: number;
  /** The limits the test set (at creation, by extendBudget, at resume), and the approval TTL. */
  limits: Limits;
  /** Each budget at the most the test ever let the run spend (a resume may lower one below what was spent). */
  peak: Limits;
  ttlMs: number | null;
  crashes: number;
  /** The step in progress, as the world knows it (spec-step.ts). */
  step: SpecStep | null;
  /** The step that ended last, until the oracle has checked its entries. */
  finished: FinishedStep | null;
}

export class Ledger {
  data: LedgerData;

  /** Sets budgets (creation, `extendBudget`, a resume's), keeping the peak of each. */
  setLimits(given: Partial<Limits>): void {
    const d = this.data;
    d.limits = { ...d.limits, ...given };
    const most = (a: number | null, b: number | null) => (a === null || b === null ? null : Math.max(a, b));
    d.peak = {
      maxSteps: Math.max(d.peak.maxSteps, d.limits.maxSteps),
      maxTokens: most(d.peak.maxTokens, d.limits.maxTokens),
      maxActiveMs: most(d.peak.maxActiveMs, d.limits.maxActiveMs),
      maxCostUsd: most(d.peak.maxCostUsd, d.limits.maxCostUsd),
    };
  }

  constructor(limits: Limits, ttlMs: number | null, from?: LedgerData) {
    this.data = from
      ? structuredClone(from)
      : {
          violations: [],
          decisions: {},
          latestRequest: {},
          denied: {},
          ruleDenials: [],
          standing: {},
          effects: [],
          applied: [],
          completedSteps: [],
          policyCalls: 0,
          toolCalls: 0,
          tokens: 0,
          costMicro: 0,
          activeMs: 0,
          limits: { ...limits },
          peak: { ...limits },
          ttlMs,
          crashes: 0,
          step: null,
          finished: null,
        };
  }

  violation(message: string): void {
    this.data.violations.push(message);
  }

  /**
   * Invariant 3, checked as the policy is called: the budget allowed this call. And the policy is
   * asked again only when every call of the step has an outcome, each in its history.
   */
  policyCalled(step: number, history: readonly HistoryEntry[]): void {
    const d = this.data;
    const noRoom = noRoomWhy({ limits: d.limits, tokens: d.tokens, costMicro: d.costMicro }, history);
    if (noRoom !== null) this.violation(`inv3: a policy call was made though ${noRoom}`);
    d.policyCalls++;
    const l = d.limits;
    if (d.completedSteps.includes(step))
      this.violation(`inv3: the policy was asked for step ${step} again after answering it`);
    if (d.completedSteps.length >= l.maxSteps) {
      this.violation(
        `inv3: policy call for step ${step} after ${d.completedSteps.length} answered steps (maxSteps ${l.maxSteps})`,
      );
    }
    if (l.maxTokens !== null && d.tokens >= l.maxTokens) {
      this.violation(`inv3: policy call with ${d.tokens} tokens used (maxTokens ${l.maxTokens})`);
    }
    if (l.maxCostUsd !== null && d.costMicro >= Math.round(l.maxCostUsd * 1e6)) {
      this.violation(`inv3: policy call with ${d.costMicro} micro-dollars spent (maxCostUsd ${l.maxCostUsd})`);
    }
    if (l.maxActiveMs !== null && d.activeMs >= l.maxActiveMs) {
      this.violation(`inv3: policy call after ${d.activeMs} active ms (maxActiveMs ${l.maxActiveMs})`);
    }
    const open = d.step?.calls.find((c) => c.state !== 'done');
    if (open) {
      this.violation(`calls: the policy was asked for step ${step} while ${open.tool} key ${open.key} has no outcome`);
    }
    const shape = historyProblem(history, 'complete');
    if (shape) this.violation(`calls: the policy was shown a history where ${shape.message}`);
  }

  /**
   * The policy answered `step` (reporting `costUsd`, or null: a cost the runtime cannot know);
   * with calls, the step begins (clock `now`).
   */
  policyAnswered(
    step: number,
    charged: Charged,
    calls: { tool: string; args: JsonObject; id: string | null }[] | null,
    now: number,
  ): void {
    this.data.completedSteps.push(step);
    this.data.tokens += charged.usage.inputTokens + charged.usage.outputTokens;
    const limit = this.data.limits.maxCostUsd;
    if ('usd' in charged.cost) this.data.costMicro += Math.round(charged.cost.usd * 1e6);
    else if (limit !== null) this.data.costMicro = Math.max(this.data.costMicro, Math.round(limit * 1e6));
    if (calls) beginStep(this.data, step, calls, now);
  }

  /** Invariants 1, 2 and 7, checked as a tool is called. Returns whether it takes effect. */
  toolCalled(call: Omit<EffectCall, 'applied'>): boolean {
    const d = this.data;
    d.toolCalls++;
    const spec = startCall(d, call.key, call.args, call.approvedCallId);
    const t = call.tool;
    // Whatever the approval (a standing one included): an edit the tool's checks refuse never runs.
    const forbidden = spec ? mayRunWith(t, call.args, spec.args) : null;
    if (forbidden) this.violation(`inv1: ${t} key ${call.key} ran with ${forbidden}: ${JSON.stringify(call.args)}`);
    if (!isSideEffect(t)) return true;
    const where = `${t}(${JSON.stringify(call.args)}) key ${call.key}`;
    if (d.ruleDenials.includes(call.key)) this.violation(`inv7: ${where} ran, but its approval rule denied it`);
    // Needs a human: the rule says ask, or a crash left its outcome unknown.
    const needsHuman = spec === null || spec.verdict !== 'run' || spec.unknown;
    const approval = call.approvedCallId === null ? undefined : d.decisions[call.approvedCallId];
    if (approval) {
      if (!approval.approved) this.violation(`inv1/7: ${where} ran on a call the human denied (${approval.callId})`);
      if (approval.tool !== t || approval.key !== call.key || !isDeepStrictEqual(approval.runArgs, call.args)) {
        this.violation(
          `inv1: ${where} is not the call approved as ${approval.callId} (${approval.tool} key ${approval.key} ${JSON.stringify(approval.runArgs)})`,
        );
      }
      if (approval.expiresAt !== null && approval.at >= approval.expiresAt) {
        this.violation(`inv1: ${where} ran on an approval given after it expired (${approval.callId})`);
      }
      if (d.latestRequest[call.key] !== undefined && d.latestRequest[call.key] !== approval.callId) {
        this.violation(`inv1: ${where} ran on approval ${approval.callId}, superseded by ${d.latestRequest[call.key]}`);
      }
    } else if (needsHuman) {
      // No human approved this id: only a standing approval for the tool, given before the call
      // was asked for, may stand in; the id is then the call's own.
      const standing = spec?.approval?.standing !== undefined && !spec.unknown && d.standing[t] !== undefined;
      const own = call.approvedCallId?.startsWith(`${call.key}#`) ?? false;
      if (!standing || !own) {
        this.violation(`inv1: ${where} ran without a human approval (approvedCallId ${call.approvedCallId})`);
      }
    }
    if (d.denied[call.key] !== undefined) this.violation(`inv7: ${where} ran after the human denied key ${call.key}`);
    let applied = true;
    if (isIdempotent(t)) {
      applied = !d.applied.includes(call.key);
      if (applied) d.applied.push(call.key);
    } else {
      // Inv 2: at most once per approval; a call that needed none at most once per key.
      const same = (e: EffectCall) =>
        e.applied &&
        e.tool === t &&
        (call.approvedCallId === null
          ? e.key === call.key && e.approvedCallId === null
          : e.approvedCallId === call.approvedCallId);
      const before = d.effects.filter(same).length;
      if (before > 0) this.violation(`inv2: ${where} ran ${before + 1} times on approval ${call.approvedCallId}`);
    }
    d.effects.push({ ...call, applied });
    return applied;
  }

  /** A tool's `verify` was asked about `key`: only a call that started may be (its effect may have happened). */
  verifyAsked(key: string): void {
    if (!this.data.effects.some((e) => e.key === key)) {
      this.violation(`verify: asked about key ${key}, whose call never started`);
    }
  }

  /** `verify` said the effect of `key` did not happen: its earlier attempts took no effect (one more may run). */
  notDone(key: string): void {
    for (const e of this.data.effects) if (e.key === key) e.applied = false;
  }

  /** The human is shown a pending call. */
  requestSeen(key: string, callId: string): void {
    this.data.latestRequest[key] = callId;
  }

  decided(decision: HumanDecision): void {
    this.data.decisions[decision.callId] = decision;
    const inTime = decision.expiresAt === null || decision.at < decision.expiresAt;
    if (!decision.approved && inTime) this.data.denied[decision.key] = decision.at;
  }
}
