/**
 * Group budgets in SQLite (store/groups.ts): a spend is one `BEGIN IMMEDIATE` transaction —
 * the write lock is taken before the budget and the window's sums are read, so spends from any
 * connection of any process add up exactly, one after the other. The arithmetic is the shared
 * one (`costAfter`); the SQL only reads and writes the rows.
 */
import type { Database } from 'better-sqlite3';
import { MICRO_USD } from '../../../machines/budget.js';
import type {
  GroupBudget,
  GroupCharge,
  GroupHoldRequest,
  GroupHoldResult,
  GroupSettlement,
  GroupSpend,
} from '../../store/contract.js';
import {
  costAfter,
  groupAfterJoin,
  groupHold,
  holdLeaseLost,
  lapsedHold,
  MAX_GROUP_MICRO_USD,
  MAX_GROUP_TOKENS,
  microOf,
  settledByLapse,
  spendOf,
  windowOf,
} from '../../store/groups.js';
import type { LeaseRecord } from '../../store/leases.js';

interface BudgetRow {
  max_cost_micro: number | null;
  max_tokens: number | null;
  period: 'day' | 'total';
}

/** A hold of the group, with its run's lease (nulls: none). */
interface HoldRow {
  run_id: string;
  hold_token: number;
  win: string;
  tokens: number;
  cost_micro: number;
  token: number | null;
  owner: string | null;
  expires_at: number | null;
}

/** The group transactions on `db`, called by the store after it checked the arguments. */
export interface GroupTransactions {
  setBudget(group: string, budget: GroupBudget | null): void;
  /** Reads (`charge` null) or adds to the group's current window at `now` (the store's clock). */
  spend(group: string, charge: Required<GroupCharge> | null, now: number): GroupSpend;
  /** Holds room for a run's call (`groupHold`), replacing its earlier hold. */
  hold(group: string, request: GroupHoldRequest, now: number): GroupHoldResult;
  /** Drops a run's hold (of that token) and adds its charge. */
  settle(
    group: string,
    settlement: Required<GroupSettlement> & { charge: Required<GroupCharge> },
    now: number,
  ): GroupSpend;
  join(runId: string, group: string): void;
  groupOf(runId: string): string | null;
}

export function groupTransactions(db: Database): GroupTransactions {
  const budgetRow = db.prepare('SELECT max_cost_micro, max_tokens, period FROM group_budgets WHERE grp = ?');
  const putBudget = db.prepare(
    `INSERT INTO group_budgets (grp, max_cost_micro, max_tokens, period) VALUES (?, ?, ?, ?)
     ON CONFLICT (grp) DO UPDATE SET max_cost_micro = excluded.max_cost_micro, max_tokens = excluded.max_tokens,
       period = excluded.period`,
  );
  const dropBudget = db.prepare('DELETE FROM group_budgets WHERE grp = ?');
  const spentRow = db.prepare('SELECT tokens, cost_micro FROM group_spend WHERE grp = ? AND win = ?');
  const putSpent = db.prepare(
    `INSERT INTO group_spend (grp, win, tokens, cost_micro) VALUES (?, ?, ?, ?)
     ON CONFLICT (grp, win) DO UPDATE SET tokens = excluded.tokens, cost_micro = excluded.cost_micro`,
  );
  const memberRow = db.prepare('SELECT grp FROM run_groups WHERE run_id = ?').pluck();
  // The live holds of the other runs in the window: their lease still has the hold's token and time left.
  const othersHeld = db.prepare(
    `SELECT COALESCE(SUM(h.tokens), 0) AS tokens, COALESCE(SUM(h.cost_micro), 0) AS cost
       FROM group_holds h JOIN leases l ON l.run_id = h.run_id
      WHERE h.grp = ? AND h.win = ? AND h.run_id <> ?
        AND l.token = h.token AND l.owner IS NOT NULL AND l.expires_at > ?`,
  );
  const leaseRow = db.prepare('SELECT token, owner, expires_at FROM leases WHERE run_id = ?');
  const holdsOf = db.prepare(
    `SELECT h.run_id, h.token AS hold_token, h.win, h.tokens, h.cost_micro, l.token, l.owner, l.expires_at
       FROM group_holds h LEFT JOIN leases l ON l.run_id = h.run_id WHERE h.grp = ?`,
  );
  const addSpent = db.prepare(
    `INSERT INTO group_spend (grp, win, tokens, cost_micro) VALUES (?, ?, ?, ?)
     ON CONFLICT (grp, win) DO UPDATE SET tokens = MIN(tokens + excluded.tokens, ${MAX_GROUP_TOKENS}),
       cost_micro = MIN(cost_micro + excluded.cost_micro, ${MAX_GROUP_MICRO_USD})`,
  );
  const dropHold = db.prepare('DELETE FROM group_holds WHERE grp = ? AND run_id = ?');
  const dropHoldOf = db.prepare('DELETE FROM group_holds WHERE grp = ? AND run_id = ? AND token = ?');
  const putHold = db.prepare(
    'INSERT INTO group_holds (grp, run_id, token, win, tokens, cost_micro) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const putMember = db.prepare('INSERT INTO run_groups (run_id, grp) VALUES (?, ?) ON CONFLICT (run_id) DO NOTHING');

  const leaseOf = (runId: string): LeaseRecord | null => {
    const row = leaseRow.get(runId) as { token: number; owner: string | null; expires_at: number | null } | undefined;
    return row ? { token: row.token, owner: row.owner, expiresAt: row.expires_at } : null;
  };

  const budgetOf = (group: string): GroupBudget | null => {
    const row = budgetRow.get(group) as BudgetRow | undefined;
    if (!row) return null;
    const maxCostUsd = row.max_cost_micro === null ? null : row.max_cost_micro / MICRO_USD;
    return { maxCostUsd, maxTokens: row.max_tokens, period: row.period };
  };

  const spend = db.transaction((group: string, charge: Required<GroupCharge> | null, now: number) => {
    const budget = budgetOf(group);
    const window = windowOf(budget?.period ?? 'day', now);
    const row = spentRow.get(group, window) as { tokens: number; cost_micro: number } | undefined;
    const before = { tokens: row?.tokens ?? 0, cost: row?.cost_micro ?? 0 };
    if (charge === null) return spendOf(group, budget, window, before.tokens, before.cost);
    const tokens = Math.min(before.tokens + charge.tokens, MAX_GROUP_TOKENS);
    const cost = costAfter(before.cost, charge, budget);
    putSpent.run(group, window, tokens, cost);
    return spendOf(group, budget, window, tokens, cost);
  });

  const hold = db.transaction((group: string, request: GroupHoldRequest, now: number): GroupHoldResult => {
    const lost = holdLeaseLost(request.runId, request.token, leaseOf(request.runId), now);
    if (lost) throw lost;
    // Holds whose lease is no longer live are charged as spent (`lapsedHold`).
    for (const h of holdsOf.all(group) as HoldRow[]) {
      const owner = h.token === null ? null : { token: h.token, owner: h.owner, expiresAt: h.expires_at };
      if (!lapsedHold(h.hold_token, owner, now)) continue;
      addSpent.run(group, h.win, h.tokens, h.cost_micro);
      dropHoldOf.run(group, h.run_id, h.hold_token);
    }
    const budget = budgetOf(group);
    const window = windowOf(budget?.period ?? 'day', now);
    const row = spentRow.get(group, window) as { tokens: number; cost_micro: number } | undefined;
    const spent = { tokens: row?.tokens ?? 0, cost: row?.cost_micro ?? 0 };
    const others = othersHeld.get(group, window, request.runId, now) as { tokens: number; cost: number };
    const { held, exhausted } = groupHold(budget, spent, others, request);
    dropHold.run(group, request.runId);
    if (held) putHold.run(group, request.runId, request.token, window, held.tokens, held.costMicroUsd);
    return { held, exhausted, spend: spendOf(group, budget, window, spent.tokens, spent.cost) };
  });

  const settle = db.transaction(
    (group: string, s: Required<GroupSettlement> & { charge: Required<GroupCharge> }, now: number) => {
      if (dropHoldOf.run(group, s.runId, s.token).changes === 0 && settledByLapse(s.token, leaseOf(s.runId), now)) {
        return spend(group, null, now);
      }
      return spend(group, s.charge, now);
    },
  );

  const join = db.transaction((runId: string, group: string) => {
    groupAfterJoin(runId, (memberRow.get(runId) as string | undefined) ?? null, group);
    putMember.run(runId, group);
  });

  return {
    setBudget: (group, budget) => {
      if (budget === null) dropBudget.run(group);
      else {
        const cost = budget.maxCostUsd === null ? null : microOf(budget.maxCostUsd);
        putBudget.run(group, cost, budget.maxTokens, budget.period);
      }
    },
    // IMMEDIATE: the write lock before the read, so no other writer adds between read and write.
    spend: (group, charge, now) => (charge === null ? spend(group, null, now) : spend.immediate(group, charge, now)),
    hold: (group, request, now) => hold.immediate(group, request, now),
    settle: (group, settlement, now) => settle.immediate(group, settlement, now),
    join: (runId, group) => join.immediate(runId, group),
    groupOf: (runId) => (memberRow.get(runId) as string | undefined) ?? null,
  };
}
