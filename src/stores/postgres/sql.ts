/**
 * The Postgres store's SQL, for one schema (quoted). Built once per store; every value is a
 * bind parameter. The save statements share their parameters:
 * $1 run id, $2 status, $3 head, $4 `from` (entries already stored), $5 the appended entries
 * (text[]), $6 pending call (JSON text or null), $7 updated at (null: the database's clock),
 * and for an update $8 the expected version.
 */
export interface Statements {
  /** The run and its entries (in order, as one array), in one statement: one snapshot. */
  load: string;
  /** Version 0: create the run unless it exists, and append; returns the version, or no row. */
  insertRun: string;
  /** Version n: only at version n with `from` entries, replace the head and append; returns the version, or no row. */
  updateRun: string;
  /** The stored version and entry count, for a conflict's message. */
  current: string;
  /** Summaries, by status ($1, or null for all), oldest update first, at most $2 (null: all). */
  list: string;
  /** Deletes a run (at version $2, unless null); its entries go by ON DELETE CASCADE. */
  delete: string;
}

export function statements(s: string): Statements {
  // Milliseconds, like every other store's ISO strings, so ties order the same everywhere.
  const updatedAt = `COALESCE($7::timestamptz, date_trunc('milliseconds', clock_timestamp()))`;
  // Runs only for the row the first CTE returned: no head written, no entries appended.
  const append = `INSERT INTO ${s}.entries (run_id, idx, body)
      SELECT r.run_id, $4::integer + t.ord::integer - 1, t.body
        FROM r, unnest($5::text[]) WITH ORDINALITY AS t (body, ord)`;
  return {
    load: `SELECT r.run_id, r.version, r.status, r.head, r.entry_count, r.pending, r.updated_at,
              COALESCE((SELECT array_agg(e.body ORDER BY e.idx) FROM ${s}.entries e WHERE e.run_id = r.run_id),
                       '{}') AS entries
         FROM ${s}.runs r WHERE r.run_id = $1`,
    insertRun: `WITH r AS (
        INSERT INTO ${s}.runs (run_id, version, status, head, entry_count, pending, updated_at)
        VALUES ($1, 1, $2, $3, cardinality($5::text[]), $6, ${updatedAt})
        ON CONFLICT (run_id) DO NOTHING
        RETURNING run_id, version
      ), e AS (${append})
      SELECT version FROM r`,
    // A concurrent writer waits for this row's lock, then re-checks the WHERE on the new row
    // version (READ COMMITTED): it matches nothing, and gets a conflict.
    updateRun: `WITH r AS (
        UPDATE ${s}.runs
           SET version = version + 1, status = $2, head = $3, entry_count = entry_count + cardinality($5::text[]),
               pending = $6, updated_at = ${updatedAt}
         WHERE run_id = $1 AND version = $8 AND entry_count = $4
        RETURNING run_id, version
      ), e AS (${append})
      SELECT version FROM r`,
    current: `SELECT version, entry_count FROM ${s}.runs WHERE run_id = $1`,
    // COLLATE "C": code-point order, the same on every server whatever its locale.
    list: `SELECT run_id, version, status, pending, updated_at FROM ${s}.runs
        WHERE $1::text IS NULL OR status = $1
        ORDER BY updated_at, run_id COLLATE "C" LIMIT $2`,
    delete: `DELETE FROM ${s}.runs WHERE run_id = $1 AND ($2::integer IS NULL OR version = $2)`,
  };
}
