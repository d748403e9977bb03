/**
 * Group budgets on Postgres (store/groups.ts). A spend is ONE statement: it reads the group's
 * budget, picks the window (a UTC day on the store's clock, or 'total') and adds to that window's
 * row with `INSERT … ON CONFLICT DO UPDATE SET tokens = tokens + $n …`: the row lock serialises
 * concurrent spends from any number of connections and machines, and each adds to the newest row
 * version, so they sum exactly. Sums are capped as in the other stores, and a cost that could not
 * be known raises the window's cost to at least the limit (fail closed), in the same statement.
 */
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
  groupAfterJoin,
  groupHold,
  holdLeaseLost,
  MAX_GROUP_MICRO_USD,
  MAX_GROUP_TOKENS,
  microOf,
  spendOf,
} from '../../store/groups.js';
import type { StoreSql } from './connections.js';
import type { Query } from './queue.js';

/** The advisory lock class of group holds: holds of one group are decided one at a time. */
const HOLD_LOCK = 0x74_6c_68; // 'tlh'

/** bigints come back as text: exact, and below 2^53 by the caps. */
interface SpendRow {
  win: string;
  tokens: string;
  cost_micro: string;
  max_cost_micro: string | null;
  max_tokens: string | null;
  period: 'day' | 'total' | null;
}

/** What a hold reads: the spending, the other runs' live holds, the run's lease and the time. */
interface HoldRow extends SpendRow {
  held_tokens: string;
  held_cost: string;
  /** How many of the group's holds have a lease no longer live. */
  lapsed: number;
  lease_token: string | null;
  lease_owner: string | null;
  lease_expires: string | null;
  now_ms: string;
}

/** The group statements for schema `s` (quoted). `at`: the store's now as ISO text, or null for the database's. */
export function groupStatements(s: string) {
  const now = (p: string) => `COALESCE(${p}::timestamptz, clock_timestamp())`;
  const budget = `b AS (SELECT max_cost_micro, max_tokens, period FROM ${s}.group_budgets WHERE grp = $1)`;
  const window = (p: string) => `w AS (
      SELECT CASE WHEN (SELECT period FROM b) = 'total' THEN 'total'
             ELSE to_char(${now(p)} AT TIME ZONE 'UTC', 'YYYY-MM-DD') END AS win)`;
  const limits = 'b.max_cost_micro::text AS max_cost_micro, b.max_tokens::text AS max_tokens, b.period';
  // $5: the cost is unknown; under a cost limit the window then holds at least the limit.
  const floor = 'COALESCE(CASE WHEN $5::boolean THEN (SELECT max_cost_micro FROM b) END, 0)';
  return {
    /** $1 group, $2 tokens, $3 micro-dollars, $4 now, $5 cost unknown. */
    spend: `WITH ${budget}, ${window('$4')}, up AS (
        INSERT INTO ${s}.group_spend AS g (grp, win, tokens, cost_micro)
        SELECT $1, w.win, $2::bigint, GREATEST($3::bigint, ${floor}) FROM w
        ON CONFLICT (grp, win) DO UPDATE SET
          tokens = LEAST(g.tokens + $2::bigint, ${MAX_GROUP_TOKENS}),
          cost_micro = GREATEST(LEAST(g.cost_micro + $3::bigint, ${MAX_GROUP_MICRO_USD}), ${floor})
        RETURNING win, tokens, cost_micro
      )
      SELECT up.win, up.tokens::text AS tokens, up.cost_micro::text AS cost_micro, ${limits}
        FROM up LEFT JOIN b ON true`,
    /** $1 group, $2 now. */
    read: `WITH ${budget}, ${window('$2')}
      SELECT w.win, COALESCE(g.tokens, 0)::text AS tokens, COALESCE(g.cost_micro, 0)::text AS cost_micro, ${limits}
        FROM w LEFT JOIN ${s}.group_spend g ON g.grp = $1 AND g.win = w.win LEFT JOIN b ON true`,
    /** $1 group, $2 micro-dollars, $3 tokens, $4 period. */
    setBudget: `INSERT INTO ${s}.group_budgets (grp, max_cost_micro, max_tokens, period) VALUES ($1, $2, $3, $4)
      ON CONFLICT (grp) DO UPDATE SET max_cost_micro = excluded.max_cost_micro, max_tokens = excluded.max_tokens,
        period = excluded.period`,
    dropBudget: `DELETE FROM ${s}.group_budgets WHERE grp = $1`,
    /** The group the run is in after joining $2: its own if it had one (the no-op update returns it). */
    join: `INSERT INTO ${s}.run_groups AS m (run_id, grp) VALUES ($1, $2)
      ON CONFLICT (run_id) DO UPDATE SET grp = m.grp RETURNING grp`,
    groupOf: `SELECT grp FROM ${s}.run_groups WHERE run_id = $1`,
    /** $1 group (and the schema's name in the key): the holds of a group take turns. */
    holdLock: `SELECT pg_advisory_xact_lock(${HOLD_LOCK}, hashtext('${s}' || $1))`,
    /**
     * $1 group, $2 run, $3 now: the window, its spending, the live holds of the other runs and the run's lease —
     * one statement, one snapshot (a settle that commits meanwhile is seen whole or not at all).
     */
    holdRead: `WITH ${budget}, ${window('$3')}
      SELECT w.win, COALESCE(g.tokens, 0)::text AS tokens, COALESCE(g.cost_micro, 0)::text AS cost_micro, ${limits},
        (SELECT COALESCE(SUM(h.tokens), 0)::text FROM ${s}.group_holds h JOIN ${s}.leases l ON l.run_id = h.run_id
          WHERE h.grp = $1 AND h.win = w.win AND h.run_id <> $2 AND l.token = h.token AND l.owner IS NOT NULL
            AND l.expires_at > ${now('$3')}) AS held_tokens,
        (SELECT COALESCE(SUM(h.cost_micro), 0)::text FROM ${s}.group_holds h JOIN ${s}.leases l ON l.run_id = h.run_id
          WHERE h.grp = $1 AND h.win = w.win AND h.run_id <> $2 AND l.token = h.token AND l.owner IS NOT NULL
            AND l.expires_at > ${now('$3')}) AS held_cost,
        (SELECT count(*) FROM ${s}.group_holds h WHERE h.grp = $1 AND NOT EXISTS (
          SELECT 1 FROM ${s}.leases l WHERE l.run_id = h.run_id AND l.token = h.token AND l.owner IS NOT NULL
            AND l.expires_at > ${now('$3')}))::int AS lapsed,
        m.token::text AS lease_token, m.owner AS lease_owner,
        (extract(epoch FROM m.expires_at) * 1000)::bigint::text AS lease_expires,
        (extract(epoch FROM ${now('$3')}) * 1000)::bigint::text AS now_ms
        FROM w LEFT JOIN ${s}.leases m ON m.run_id = $2 LEFT JOIN ${s}.group_spend g ON g.grp = $1 AND g.win = w.win LEFT JOIN b ON true`,
    /** $1 group, $2 run. */
    holdDrop: `DELETE FROM ${s}.group_holds WHERE grp = $1 AND run_id = $2`,
    /** $1 group, $2 now: the group's holds whose lease is no longer live are charged as spent (`lapsedHold`). */
    holdLapsed: `WITH gone AS (
        DELETE FROM ${s}.group_holds h WHERE h.grp = $1 AND NOT EXISTS (
          SELECT 1 FROM ${s}.leases l WHERE l.run_id = h.run_id AND l.token = h.token AND l.owner IS NOT NULL
            AND l.expires_at > ${now('$2')})
        RETURNING h.win, h.tokens, h.cost_micro),
      sums AS (SELECT win, SUM(tokens) AS tokens, SUM(cost_micro) AS cost FROM gone GROUP BY win)
      INSERT INTO ${s}.group_spend AS g (grp, win, tokens, cost_micro)
        SELECT $1, win, LEAST(tokens, ${MAX_GROUP_TOKENS})::bigint, LEAST(cost, ${MAX_GROUP_MICRO_USD})::bigint FROM sums
        ON CONFLICT (grp, win) DO UPDATE SET tokens = LEAST(g.tokens + excluded.tokens, ${MAX_GROUP_TOKENS}),
          cost_micro = LEAST(g.cost_micro + excluded.cost_micro, ${MAX_GROUP_MICRO_USD})`,
    /** $1 group, $2 run, $3 token, $4 window, $5 tokens, $6 micro-dollars. */
    holdPut: `INSERT INTO ${s}.group_holds (grp, run_id, token, win, tokens, cost_micro) VALUES ($1, $2, $3, $4, $5, $6)`,
    /**
     * As `spend`, with $6 run and $7 token: that hold is dropped in the same statement. Without such a
     * hold, the charge is added only under the run's live lease of that token: else the hold was
     * charged as spent when its lease stopped being live (`settledByLapse`), and the spending is read.
     */
    settle: `WITH dropped AS (DELETE FROM ${s}.group_holds WHERE grp = $1 AND run_id = $6 AND token = $7 RETURNING 1),
      ${budget}, ${window('$4')}, up AS (
        INSERT INTO ${s}.group_spend AS g (grp, win, tokens, cost_micro)
        SELECT $1, w.win, $2::bigint, GREATEST($3::bigint, ${floor}) FROM w
         WHERE EXISTS (SELECT 1 FROM dropped) OR EXISTS (SELECT 1 FROM ${s}.leases l WHERE l.run_id = $6
           AND l.token = $7 AND l.owner IS NOT NULL AND l.expires_at > ${now('$4')})
        ON CONFLICT (grp, win) DO UPDATE SET
          tokens = LEAST(g.tokens + $2::bigint, ${MAX_GROUP_TOKENS}),
          cost_micro = GREATEST(LEAST(g.cost_micro + $3::bigint, ${MAX_GROUP_MICRO_USD}), ${floor})
        RETURNING win, tokens, cost_micro
      )
      SELECT up.win, up.tokens::text AS tokens, up.cost_micro::text AS cost_micro, ${limits}
        FROM up LEFT JOIN b ON true
      UNION ALL
      SELECT w.win, COALESCE(g.tokens, 0)::text, COALESCE(g.cost_micro, 0)::text, ${limits}
        FROM w LEFT JOIN ${s}.group_spend g ON g.grp = $1 AND g.win = w.win LEFT JOIN b ON true
       WHERE NOT EXISTS (SELECT 1 FROM up)`,
  };
}

export type GroupStatements = ReturnType<typeof groupStatements>;

function spendOfRow(group: string, row: SpendRow): GroupSpend {
  const budget: GroupBudget | null =
    row.period === null
      ? null
      : {
          maxCostUsd: row.max_cost_micro === null ? null : Number(row.max_cost_micro) / MICRO_USD,
          maxTokens: row.max_tokens === null ? null : Number(row.max_tokens),
          period: row.period,
        };
  return spendOf(group, budget, row.win, Number(row.tokens), Number(row.cost_micro));
}

/** The group operations, run by the store's `query` (arguments already checked); holds by `run` in a transaction. */
export function groupsOn(
  query: Query,
  sql: GroupStatements,
  run: <T>(op: string, work: (sql: StoreSql) => Promise<T>) => Promise<T>,
) {
  return {
    async hold(group: string, request: GroupHoldRequest, at: string | null): Promise<GroupHoldResult> {
      return run('holdGroup', async (client) => {
        await client.query('BEGIN', []);
        try {
          await client.query(sql.holdLock, [group]);
          const read = async () =>
            (await client.query<HoldRow>(sql.holdRead, [group, request.runId, at])).rows[0] as HoldRow;
          let row = await read();
          const lease =
            row.lease_token === null
              ? null
              : {
                  token: Number(row.lease_token),
                  owner: row.lease_owner,
                  expiresAt: row.lease_expires === null ? null : Number(row.lease_expires),
                };
          const lost = holdLeaseLost(request.runId, request.token, lease, Number(row.now_ms));
          if (lost) throw lost;
          if (Number(row.lapsed) > 0) {
            // Holds whose lease is no longer live are charged as spent, and the spending read again.
            await client.query(sql.holdLapsed, [group, at]);
            row = await read();
          }
          const spend = spendOfRow(group, row);
          const spent = { tokens: Number(row.tokens), cost: Number(row.cost_micro) };
          const others = { tokens: Number(row.held_tokens), cost: Number(row.held_cost) };
          const { held, exhausted } = groupHold(spend.budget, spent, others, request);
          await client.query(sql.holdDrop, [group, request.runId]);
          if (held) {
            const { tokens, costMicroUsd } = held;
            await client.query(sql.holdPut, [group, request.runId, request.token, row.win, tokens, costMicroUsd]);
          }
          await client.query('COMMIT', []);
          return { held, exhausted, spend };
        } catch (error) {
          await client.query('ROLLBACK', []);
          throw error;
        }
      });
    },
    async settle(
      group: string,
      s: Required<GroupSettlement> & { charge: Required<GroupCharge> },
      at: string | null,
    ): Promise<GroupSpend> {
      const c = s.charge;
      const { rows } = await query<SpendRow>('settleGroup', sql.settle, [
        group,
        c.tokens,
        c.costMicroUsd,
        at,
        c.costUnknown,
        s.runId,
        s.token,
      ]);
      return spendOfRow(group, rows[0] as SpendRow);
    },
    async setBudget(group: string, budget: GroupBudget | null): Promise<void> {
      if (budget === null) await query('setGroupBudget', sql.dropBudget, [group]);
      else {
        const cost = budget.maxCostUsd === null ? null : microOf(budget.maxCostUsd);
        await query('setGroupBudget', sql.setBudget, [group, cost, budget.maxTokens, budget.period]);
      }
    },
    async spend(group: string, charge: Required<GroupCharge> | null, at: string | null): Promise<GroupSpend> {
      const { rows } =
        charge === null
          ? await query<SpendRow>('groupSpend', sql.read, [group, at])
          : await query<SpendRow>('spendGroup', sql.spend, [
              group,
              charge.tokens,
              charge.costMicroUsd,
              at,
              charge.costUnknown,
            ]);
      return spendOfRow(group, rows[0] as SpendRow);
    },
    async join(runId: string, group: string): Promise<void> {
      const { rows } = await query<{ grp: string }>('joinGroup', sql.join, [runId, group]);
      const stored = (rows[0] as { grp: string }).grp;
      groupAfterJoin(runId, stored === group ? null : stored, group);
    },
    async groupOf(runId: string): Promise<string | null> {
      const { rows } = await query<{ grp: string }>('groupOf', sql.groupOf, [runId]);
      return rows[0]?.grp ?? null;
    },
  };
}
