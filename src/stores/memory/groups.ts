/**
 * Group budgets in memory (MemoryStore): every operation decides synchronously, so a spend reads
 * and adds in one step that no other call can come between.
 */

import type { CheckedSettlement } from '../../store/checked-groups.js';
import { nowOf } from '../../store/clock.js';
import type { GroupBudget, GroupCharge, GroupHoldRequest, GroupHoldResult, GroupSpend } from '../../store/contract.js';
import {
  costAfter,
  groupAfterJoin,
  groupHold,
  holdLeaseLost,
  lapsedHold,
  MAX_GROUP_MICRO_USD,
  MAX_GROUP_TOKENS,
  settledByLapse,
  spendOf,
  windowOf,
} from '../../store/groups.js';
import type { LeaseRecord } from '../../store/leases.js';

/** One run's hold on its group, in one window, under one lease. */
interface Hold {
  token: number;
  window: string;
  tokens: number;
  cost: number;
}

/** The group half of a `MemoryStore`, given checked arguments (store/checked-groups.ts). */
export class MemoryGroups {
  readonly #budgets = new Map<string, GroupBudget>();
  /** Spending by group, then by window: tokens and micro-dollars. */
  readonly #spent = new Map<string, Map<string, { tokens: number; cost: number }>>();
  readonly #members = new Map<string, string>();
  /** Holds by group, then by run. */
  readonly #holds = new Map<string, Map<string, Hold>>();
  readonly #now: () => number;
  readonly #leaseOf: (runId: string) => LeaseRecord | null;

  /** `leaseOf`: a run's lease record, which says whether its hold is live. */
  constructor(now: () => number, leaseOf: (runId: string) => LeaseRecord | null = () => null) {
    this.#now = now;
    this.#leaseOf = leaseOf;
  }

  setBudget(group: string, budget: GroupBudget | null): void {
    if (budget === null) this.#budgets.delete(group);
    else this.#budgets.set(group, budget);
  }

  hold(group: string, r: GroupHoldRequest): GroupHoldResult {
    const now = nowOf(this.#now, 'holdGroup');
    const lost = holdLeaseLost(r.runId, r.token, this.#leaseOf(r.runId), now);
    if (lost) throw lost;
    this.#chargeLapsed(group, now);
    const { budget, window, spent } = this.#window(group, now);
    const spend = spendOf(group, budget, window, spent.tokens, spent.cost);
    const holds = this.#holds.get(group) ?? new Map<string, Hold>();
    const others = { tokens: 0, cost: 0 };
    for (const [runId, hold] of holds) {
      if (runId === r.runId || hold.window !== window) continue;
      others.tokens += hold.tokens;
      others.cost += hold.cost;
    }
    const { held, exhausted } = groupHold(budget, spent, others, r);
    holds.delete(r.runId);
    if (held) holds.set(r.runId, { token: r.token, window, tokens: held.tokens, cost: held.costMicroUsd });
    this.#holds.set(group, holds);
    return { held, exhausted, spend };
  }

  settle(group: string, s: CheckedSettlement): GroupSpend {
    const holds = this.#holds.get(group);
    if (holds?.get(s.runId)?.token === s.token) holds.delete(s.runId);
    else if (settledByLapse(s.token, this.#leaseOf(s.runId), nowOf(this.#now, 'settleGroup'))) {
      return this.spend('settleGroup', group, null);
    }
    return this.spend('settleGroup', group, s.charge);
  }

  join(runId: string, group: string): void {
    this.#members.set(runId, groupAfterJoin(runId, this.#members.get(runId) ?? null, group));
  }

  groupOf(runId: string): string | null {
    return this.#members.get(runId) ?? null;
  }

  /**
   * Charges the group's holds whose lease is no longer live (`lapsedHold`) to their windows, as
   * spent, and drops them: the call each was held for may have been made, and billed.
   */
  #chargeLapsed(group: string, now: number): void {
    const holds = this.#holds.get(group);
    if (!holds) return;
    const windows = this.#spent.get(group) ?? new Map<string, { tokens: number; cost: number }>();
    for (const [runId, hold] of holds) {
      if (!lapsedHold(hold.token, this.#leaseOf(runId), now)) continue;
      const before = windows.get(hold.window) ?? { tokens: 0, cost: 0 };
      windows.set(hold.window, {
        tokens: Math.min(before.tokens + hold.tokens, MAX_GROUP_TOKENS),
        cost: Math.min(before.cost + hold.cost, MAX_GROUP_MICRO_USD),
      });
      holds.delete(runId);
    }
    if (windows.size > 0) this.#spent.set(group, windows);
  }

  /** The group's budget, its window at `now`, and what that window has spent. */
  #window(group: string, now: number) {
    const budget = this.#budgets.get(group) ?? null;
    const window = windowOf(budget?.period ?? 'day', now);
    const spent = this.#spent.get(group)?.get(window) ?? { tokens: 0, cost: 0 };
    return { budget, window, spent };
  }

  /** What the group has spent in its current window, after adding `charge` (none: null). */
  spend(call: string, group: string, charge: Required<GroupCharge> | null): GroupSpend {
    const { budget, window, spent: before } = this.#window(group, nowOf(this.#now, call));
    const windows = this.#spent.get(group) ?? new Map<string, { tokens: number; cost: number }>();
    if (charge === null) return spendOf(group, budget, window, before.tokens, before.cost);
    const after = {
      tokens: Math.min(before.tokens + charge.tokens, Number.MAX_SAFE_INTEGER),
      cost: costAfter(before.cost, charge, budget),
    };
    windows.set(window, after);
    this.#spent.set(group, windows);
    return spendOf(group, budget, window, after.tokens, after.cost);
  }
}
