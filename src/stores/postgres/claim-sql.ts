/**
 * `claimNext`'s statements (claim-order.ts says the order): the first runnable run of the agents by
 * class — a recorded decision or an expired approval, then a lapsed lease, then the oldest running
 * run — or the oldest runnable run whatever its class. Parameters: $1 owner, $2 lease length in ms,
 * $3 agents (text[]), $4 the store's now (null: the database's), $5 runs to pass by (text[]), $6
 * the claiming process (JSON text or null).
 *
 * Each class is found through an index of its own, so that a backlog of one costs the others
 * nothing: `runs_decided` (the few runs with a recorded decision) and `runs_expiring` (runs awaiting
 * approval, by their earliest expiry), `leases_held` (the few leases with an owner: live, or the
 * lapsed ones of dead owners), `runs_by_status` (the running runs, oldest first). A class is looked
 * at only when those before it found nothing (a one-time filter), and every pick locks its run's
 * row with `SKIP LOCKED`, so racing workers take different runs without waiting.
 */

/** `s`: the quoted schema; `now(param)`: the store's now from a parameter; `ms(param)`: an interval. */
export function claimNextStatements(
  s: string,
  now: (param: string) => string,
  ms: (param: string) => string,
): { oldest: string; byClass: string } {
  // The store's now, taken once (an InitPlan): a stable value can bound an index scan, where
  // clock_timestamp(), volatile, can only filter row by row.
  const clock = `t AS (SELECT ${now('$4')} AS now)`;
  const at = '(SELECT now FROM t)';
  const run = 'r.run_id, r.version, r.status, r.pending, r.updated_at, r.agent, r.decision';
  const mine = 'r.agent = ANY ($3::text[]) AND r.run_id <> ALL ($5::text[])';
  const free = `(l.owner IS NULL OR l.expires_at <= ${at})`;
  const pick = 'ORDER BY r.updated_at, r.run_id COLLATE "C" LIMIT 1 FOR UPDATE OF r SKIP LOCKED';
  // A recorded decision or an expired approval. The candidates' ids as an array (an InitPlan):
  // the runs are then read by key, never by walking the inbox.
  const decided = (gate: string) => `SELECT ${run}
          FROM ${s}.runs r LEFT JOIN ${s}.leases l ON l.run_id = r.run_id
         WHERE ${gate} r.run_id = ANY (ARRAY(
                 SELECT d.run_id FROM ${s}.runs d WHERE d.decision IS NOT NULL
                 UNION
                 SELECT e.run_id FROM ${s}.runs e
                  WHERE e.status = 'awaiting_approval' AND e.pending_expires_at IS NOT NULL
                    AND e.pending_expires_at <= ${at}))
           AND ${mine} AND r.status = 'awaiting_approval' AND ${free}
         ${pick}`;
  // A lease with an owner whose time ran out, on a running run.
  const lapsed = (gate: string) => `SELECT ${run}
          FROM ${s}.leases l JOIN ${s}.runs r ON r.run_id = l.run_id
         WHERE ${gate} l.owner IS NOT NULL AND l.expires_at <= ${at} AND ${mine} AND r.status = 'running'
         ${pick}`;
  // The oldest running run whose lease is free (new, or lapsed).
  const running = (gate: string) => `SELECT ${run}
          FROM ${s}.runs r LEFT JOIN ${s}.leases l ON l.run_id = r.run_id
         WHERE ${gate} r.status = 'running' AND ${mine} AND ${free}
         ${pick}`;
  // held: the chosen run's lease row, locked without waiting: a writer that holds it (a save, a
  // decision) is about to change the run; waiting for it while holding the run's row could
  // deadlock with that writer, which locks the lease first. k: the claim, with the rule of
  // `claim`, checked on the newest lease row: at most one claimer wins a run.
  const claim = `held AS MATERIALIZED (
        SELECT l.run_id FROM ${s}.leases l JOIN c ON l.run_id = c.run_id FOR UPDATE OF l SKIP LOCKED
      ), k AS (
        INSERT INTO ${s}.leases AS l (run_id, token, owner, expires_at, process)
        SELECT c.run_id, 1, $1, ${at} + ${ms('$2')}, $6::text FROM c
         WHERE EXISTS (SELECT 1 FROM held) OR NOT EXISTS (SELECT 1 FROM ${s}.leases x WHERE x.run_id = c.run_id)
        ON CONFLICT (run_id) DO UPDATE
           SET token = l.token + 1, owner = excluded.owner, expires_at = excluded.expires_at, process = excluded.process
         WHERE l.owner IS NULL OR l.expires_at <= ${at}
        RETURNING run_id, token::text AS token, owner, expires_at
      )
      SELECT c.*, k.token, k.owner, k.expires_at FROM c LEFT JOIN k ON k.run_id = c.run_id`;
  return {
    // The older of the first decided run and the first running run (a lapsed one is running).
    oldest: `WITH ${clock}, d AS MATERIALIZED (${decided('')}
      ), o AS MATERIALIZED (${running('')}
      ), c AS MATERIALIZED (
        SELECT * FROM (SELECT * FROM d UNION ALL SELECT * FROM o) AS u
         ORDER BY u.updated_at, u.run_id COLLATE "C" LIMIT 1
      ), ${claim}`,
    byClass: `WITH ${clock}, d AS MATERIALIZED (${decided('')}
      ), p AS MATERIALIZED (${lapsed('NOT EXISTS (SELECT 1 FROM d) AND')}
      ), o AS MATERIALIZED (${running('NOT EXISTS (SELECT 1 FROM d) AND NOT EXISTS (SELECT 1 FROM p) AND')}
      ), c AS MATERIALIZED (SELECT * FROM d UNION ALL SELECT * FROM p UNION ALL SELECT * FROM o), ${claim}`,
  };
}
