/**
 * The ledger: what happened in the world outside the agent, written down by the test's own
 * policy, tools and human, never read from the agent. Invariants 1, 2, 3 and 7 are checked
 * against it, so a bug that the machine and the model share (the model *is* the machine) is
 * still caught: the ledger does not take the machine's word for anything.
 */
import { isDeepStrictEqual } from 'node:util';
import type { JsonObject, Limits } from '../../../machines/types.js';
import { isToolName, TOOLS } from './alphabet.js';

/** A human's decision, as the human saw the pending call. */
export interface HumanDecision {
  callId: string;
  key: string;
  tool: string;
  args: JsonObject;
  approved: boolean;
  /** Clock time of the decision and of the call's expiry (null: never expires). */
  at: number;
  expiresAt: number | null;
}

/** One call of a side-effecting tool's `fn`. */
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
  effects: EffectCall[];
  /** Keys the deduplicating tool has applied. */
  applied: string[];
  /** Policy calls that returned an action (malformed ones included): step numbers. */
  completedSteps: number[];
  policyCalls: number;
  toolCalls: number;
  /** Tokens reported by completed policy calls; clock time spent in calls. */
  tokens: number;
  activeMs: number;
  /** The limits the test set (at creation, by extendBudget, at resume). */
  limits: Limits;
  crashes: number;
}

export class Ledger {
  data: LedgerData;

  constructor(limits: Limits, from?: LedgerData) {
    this.data = from
      ? structuredClone(from)
      : {
          violations: [],
          decisions: {},
          latestRequest: {},
          denied: {},
          effects: [],
          applied: [],
          completedSteps: [],
          policyCalls: 0,
          toolCalls: 0,
          tokens: 0,
          activeMs: 0,
          limits: { ...limits },
          crashes: 0,
        };
  }

  violation(message: string): void {
    this.data.violations.push(message);
  }

  /** Invariant 3, checked as the policy is called: the budget allowed this call. */
  policyCalled(step: number): void {
    const d = this.data;
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
    if (l.maxActiveMs !== null && d.activeMs >= l.maxActiveMs) {
      this.violation(`inv3: policy call after ${d.activeMs} active ms (maxActiveMs ${l.maxActiveMs})`);
    }
  }

  policyAnswered(step: number, tokens: number): void {
    this.data.completedSteps.push(step);
    this.data.tokens += tokens;
  }

  /** Invariants 1, 2 and 7, checked as a side effect happens. Returns whether it takes effect. */
  toolCalled(call: Omit<EffectCall, 'applied'>): boolean {
    const d = this.data;
    d.toolCalls++;
    const t = call.tool;
    if (!isToolName(t) || !TOOLS[t].sideEffect) return true;
    const where = `${t}(${JSON.stringify(call.args)}) key ${call.key}`;
    const approval = call.approvedCallId === null ? undefined : d.decisions[call.approvedCallId];
    if (!approval) {
      this.violation(`inv1: ${where} ran without a human approval (approvedCallId ${call.approvedCallId})`);
    } else {
      if (!approval.approved) this.violation(`inv1/7: ${where} ran on a call the human denied (${approval.callId})`);
      if (approval.tool !== t || approval.key !== call.key || !isDeepStrictEqual(approval.args, call.args)) {
        this.violation(
          `inv1: ${where} is not the call approved as ${approval.callId} (${approval.tool} ${JSON.stringify(approval.args)})`,
        );
      }
      if (approval.expiresAt !== null && approval.at >= approval.expiresAt) {
        this.violation(`inv1: ${where} ran on an approval given after it expired (${approval.callId})`);
      }
      if (d.latestRequest[call.key] !== undefined && d.latestRequest[call.key] !== approval.callId) {
        this.violation(`inv1: ${where} ran on approval ${approval.callId}, superseded by ${d.latestRequest[call.key]}`);
      }
    }
    if (d.denied[call.key] !== undefined) this.violation(`inv7: ${where} ran after the human denied key ${call.key}`);
    let applied = true;
    if (TOOLS[t].idempotent) {
      applied = !d.applied.includes(call.key);
      if (applied) d.applied.push(call.key);
    } else if (call.approvedCallId !== null) {
      const before = d.effects.filter((e) => e.tool === t && e.approvedCallId === call.approvedCallId).length;
      if (before > 0) this.violation(`inv2: ${where} ran ${before + 1} times on approval ${call.approvedCallId}`);
    }
    d.effects.push({ ...call, applied });
    return applied;
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
