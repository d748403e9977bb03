/**
 * Group budgets in memory (MemoryStore): every operation decides synchronously, so a spend reads
 * and adds in one step that no other call can come between.
 */

import {
  checkGroupBudget,
  checkGroupCharge,
  checkGroupId,
  costAfter,
  type GroupBudget,
  type GroupBudgetStore,
  type GroupCharge,
  type GroupSpend,
  groupAfterJoin,
  spendOf,
  windowOf,
} from './groups.js';
import { checkRunId, nowOf } from './rules.js';

export class MemoryGroups implements GroupBudgetStore {
  readonly #budgets = new Map<string, GroupBudget>();
  /** Spending by group, then by window: tokens and micro-dollars. */
  readonly #spent = new Map<string, Map<string, { tokens: number; cost: number }>>();
  readonly #members = new Map<string, string>();
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  async setGroupBudget(group: string, budget: Partial<GroupBudget> | null): Promise<void> {
    checkGroupId('setGroupBudget', group);
    const checked = checkGroupBudget('setGroupBudget', budget);
    if (checked === null) this.#budgets.delete(group);
    else this.#budgets.set(group, checked);
  }

  async groupSpend(group: string): Promise<GroupSpend> {
    checkGroupId('groupSpend', group);
    return this.#spend('groupSpend', group, null);
  }

  async spendGroup(group: string, charge: GroupCharge): Promise<GroupSpend> {
    checkGroupId('spendGroup', group);
    return this.#spend('spendGroup', group, checkGroupCharge('spendGroup', charge));
  }

  async joinGroup(runId: string, group: string): Promise<void> {
    checkRunId('joinGroup', runId);
    checkGroupId('joinGroup', group);
    this.#members.set(runId, groupAfterJoin(runId, this.#members.get(runId) ?? null, group));
  }

  async groupOf(runId: string): Promise<string | null> {
    checkRunId('groupOf', runId);
    return this.#members.get(runId) ?? null;
  }

  #spend(call: string, group: string, charge: Required<GroupCharge> | null): GroupSpend {
    const budget = this.#budgets.get(group) ?? null;
    const window = windowOf(budget?.period ?? 'day', nowOf(this.#now, call));
    const windows = this.#spent.get(group) ?? new Map<string, { tokens: number; cost: number }>();
    const before = windows.get(window) ?? { tokens: 0, cost: 0 };
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
