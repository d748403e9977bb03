/**
 * The Postgres store's SQL, for one schema (quoted). Built once per store; every value is a
 * bind parameter. The save statements share their parameters:
 * $1 run id, $2 status, $3 head, $4 `from` (entries already stored), $5 the appended entries
 * (text[]), $6 pending calls (a JSON array as text, or null), $7 the store's now (null: the
 * database's clock), $8 the earliest expiry of the pending calls (or null), $9 the lease's token
 * (null: a save without a lease), $10 the lease's length in ms, $11 the agent's name (null:
 * keep the stored one), $12 relaxed, $13 the new base (null: keep the stored one; a new run's is
 * null), and for an update $14 the expected version. A save clears a recorded decision, and one
 * without a lease (so the run has no live lease after it) notifies watchers.
 *
 * The lease rules are those of src/store/leases.ts, said in SQL: a lease is live while it has
 * an owner and `now < expires_at`; a lease is current while the token matches and it has an owner.
 */
import { claimNextStatements } from './claim-sql.js';

export interface Statements {
  /**
   * The run's row (idx -1, its head as `body`), then its entries' rows in order: one statement,
   * one snapshot. Read as arrays: the columns by position are `LOAD` in rows.ts.
   */
  load: string;
  /** The run's row, without its head and entries. */
  summary: string;
  /** Version 0: create the run unless it exists, and append, if the lease allows; returns the version, or no row. */
  insertRun: string;
  /** Version n: only at version n with `from` entries, and if the lease allows, replace the head and append; returns the version, or no row. */
  updateRun: string;
  /**
   * Many saves in one statement (batch commit), each as `insertRun` (version 0) or `updateRun`
   * would make it, each matched or refused alone; returns the run id and new version of each save
   * made. Parameters are arrays, one element per save: $1 run ids, $2 statuses, $3 heads, $4
   * `from`s, $5 appended counts, $6 pending calls, $8 expiries, $9 lease tokens, $10 lease
   * lengths, $11 agents, $13 bases, $14 expected versions; the entries flattened: $15 bodies, $16
   * their run ids, $17 their indexes; and $7 the store's now, $12 relaxed (every save in it is).
   */
  saveRuns: string;
  /** Why a write matched nothing: the run's version and entry count, its lease, and now ($2: the store's now). */
  refusal: string;
  /** Summaries by status ($1, null for all), agent ($5, null for all) and expiry ($3, null for all; $4 the store's now), oldest update first, at most $2. */
  list: string;
  /** Deletes a run (at version $2, unless null) if the lease allows (token $3, now $4); its entries go by `deleteEntries`. */
  delete: string;
  /** The entries of run $1: after `delete`, in the same transaction but a statement of its own (postgres.ts). */
  deleteEntries: string;
  /**
   * Claims run $1 for owner $2 (in process $5, JSON text or null) for $3 ms (now $4): one
   * statement; returns the lease, or no row while another owner's is live.
   */
  claim: string;
  /** The lease record of run $1 (with its holder's process), and now ($2: the store's now). */
  lease: string;
  /** Renews run $1's lease if token $2 is current, to now ($3) + $4 ms; returns the lease, or no row. */
  renew: string;
  /**
   * `renew` for many leases at once: $1 run ids, $2 tokens, $3 lengths in ms (one element per
   * lease), $4 the store's now. One row per lease, by its position (`ord`, from 1): the renewed
   * lease (`token`, `owner`, `expires_at`), or nulls and the run's current lease record
   * (`current_token`, `current_owner`; nulls when it has none) when it was lost.
   */
  renewRuns: string;
  /** Releases run $1's lease if token $2 is current, and notifies watchers; one row, or none. */
  release: string;
  /**
   * `claim` for several runs at once (lease-batches.ts): $1 run ids, $2 owners, $3 lease lengths
   * in ms, $5 processes (arrays, one element per claim, one claim per run), $4 the store's now; returns the
   * lease of each claim made (with its run id), none for a run another owner holds.
   */
  claimRuns: string;
  /**
   * `release` for several runs at once: $1 run ids, $2 tokens (one per run); returns the run id
   * of each lease released, and notifies watchers once if any was.
   */
  releaseRuns: string;
  /**
   * Records decision $2 (JSON text) on run $1 at version $3 (now $4) if it awaits approval,
   * holds no decision and no live lease: version + 1, and watchers notified; returns the version, or no row.
   */
  queue: string;
  /**
   * Claims the oldest runnable run of agents $3 (text[]) whose lease is free, but runs $5
   * (text[]), for owner $1 (in process $6) for $2 ms (now $4); returns it with the new lease, the
   * run without a lease when another claim took it first or a writer holds its lease row (try
   * again, without it), or no row when none is runnable (claim-sql.ts).
   */
  claimNext: string;
  /** `claimNext`, taking the first run by class (a recorded decision, a lapsed lease, then the oldest). */
  claimNextByClass: string;
}

/** A run's columns as `list` and `summary` read them (no head, no entries). */
const SUMMARY_COLUMNS = 'run_id, version, status, pending, updated_at, agent, decision';

/** The channel every store's watchers listen on; the payload is the schema's name. */
export const CHANNEL = 'tollgate_runnable';

/** The statement that tells every listening store of `schema` that a run may be runnable (NOTIFY is transactional). */
export const notifyOf = (schema: string) => `(SELECT pg_notify('${CHANNEL}', '${schema}'))::text`;

/** The store's now: the injected clock's (`$n`), else the database's, to the millisecond like every other store's. */
export const nowOf = (param: string) =>
  `COALESCE(${param}::timestamptz, date_trunc('milliseconds', clock_timestamp()))`;
export const ms = (param: string) => `(${param}::integer * interval '1 millisecond')`;

/**
 * The `load` statement for run `id` (a parameter or a literal), its rows kept only where `readable`
 * holds (an SQL condition; `open` reads a run only once it is claimed or has ended).
 *
 * Entries as rows, not aggregated: the server's json_agg escaped every character of every entry
 * (most of a long run's load), and a text[] is parsed character by character by node-postgres.
 * The run's own row (idx -1) holds its head in `body` and its other columns in `meta` (a small
 * JSON array: rows.ts `LOAD_META`), so an entry's row is two values and two nulls, not eleven
 * columns. No ORDER BY: each entry carries its index and is put in its place as it is read (the
 * server's sort was a large part of the statement).
 */
export function loadOf(s: string, id: string, readable = 'true'): string {
  return `SELECT -1 AS idx, r.head AS body,
              json_build_array(r.run_id, r.version, r.status, r.entry_count, r.pending, r.agent, r.decision,
                r.base)::text AS meta,
              r.updated_at
         FROM ${s}.runs r WHERE r.run_id = ${id} AND ${readable}
       UNION ALL
       SELECT e.idx, e.body, NULL, NULL FROM ${s}.entries e WHERE e.run_id = ${id} AND ${readable}`;
}

/** `s`: the quoted schema name; `schema`: the name itself (an identifier: safe in a literal). */
export function statements(s: string, schema: string): Statements {
  const now = nowOf('$7');
  const claims = claimNextStatements(s, nowOf, ms);
  // After a commit, every listening store of this schema hears it (NOTIFY is transactional).
  const notify = notifyOf(schema);
  // The lease check of a write, evaluated once the lease row is locked (FOR UPDATE returns its
  // newest version): a claim waits for this statement to commit, and this statement for a claim
  // in progress, so the check and the write are one atomic step. Lease row first, then the run:
  // every statement locks in this order (claimNext locks the run first, but never waits for a
  // lease row), so two never deadlock.
  const fence = (token: string, at: string) => `l AS (
        SELECT token, owner, expires_at FROM ${s}.leases WHERE run_id = $1 FOR UPDATE
      ), ok AS (
        SELECT 1 AS ok WHERE CASE WHEN ${token}::bigint IS NULL
          THEN NOT EXISTS (SELECT 1 FROM l WHERE owner IS NOT NULL AND expires_at > ${at})
          ELSE EXISTS (SELECT 1 FROM l WHERE token = ${token}::bigint AND owner IS NOT NULL) END
      )`;
  // Runs only for the row the write returned: no head written, no entries appended.
  const append = `e AS (INSERT INTO ${s}.entries (run_id, idx, body)
      SELECT r.run_id, $4::integer + t.ord::integer - 1, t.body
        FROM r, unnest($5::text[]) WITH ORDINALITY AS t (body, ord))`;
  // A relaxed save ($12) commits without waiting for its WAL record to be flushed (this
  // transaction only): it survives a crash of the server process, not of the machine.
  const relax = `CASE WHEN $12::boolean THEN set_config('synchronous_commit', 'off', true) END`;
  // A save with a lease extends it (never shortens it), only if the save happened.
  const extend = `n AS (UPDATE ${s}.leases SET expires_at = GREATEST(expires_at, ${now} + ${ms('$10')})
      WHERE run_id = $1 AND token = $9::bigint AND EXISTS (SELECT 1 FROM r))`;
  return {
    load: loadOf(s, '$1'),
    summary: `SELECT ${SUMMARY_COLUMNS} FROM ${s}.runs WHERE run_id = $1`,
    insertRun: `WITH ${fence('$9', now)}, r AS (
        INSERT INTO ${s}.runs
               (run_id, version, status, head, entry_count, pending, pending_expires_at, updated_at, agent, base)
        SELECT $1, 1, $2, $3, cardinality($5::text[]), $6, $8::timestamptz, ${now}, $11::text, $13::text FROM ok
        ON CONFLICT (run_id) DO NOTHING
        RETURNING run_id, version
      ), ${append}, ${extend}
      SELECT version, CASE WHEN $9::bigint IS NULL THEN ${notify} END AS notified, ${relax} AS relaxed FROM r`,
    // A concurrent writer waits for this row's lock, then re-checks the WHERE on the new row
    // version (READ COMMITTED): it matches nothing, and gets a conflict.
    updateRun: `WITH ${fence('$9', now)}, r AS (
        UPDATE ${s}.runs
           SET version = version + 1, status = $2, head = $3, entry_count = entry_count + cardinality($5::text[]),
               pending = $6, pending_expires_at = $8::timestamptz, updated_at = ${now},
               agent = COALESCE($11::text, agent), decision = NULL, base = COALESCE($13::text, base)
         WHERE run_id = $1 AND version = $14 AND entry_count = $4 AND EXISTS (SELECT 1 FROM ok)
           AND ($11::text IS NULL OR agent IS NULL OR agent = $11::text)
        RETURNING run_id, version
      ), ${append}, ${extend}
      SELECT version, CASE WHEN $9::bigint IS NULL THEN ${notify} END AS notified, ${relax} AS relaxed FROM r`,
    // The lease rows locked in run-id order (two batches touching the same runs wait, never
    // deadlock), then the run rows; each save's lease check and version check are those of
    // insertRun or updateRun. The caller puts at most one save per run in a batch: the two
    // writing parts then touch different rows (a part does not see the other's writes).
    saveRuns: `WITH b AS MATERIALIZED (
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::integer[], $5::integer[], $6::text[],
                             $8::timestamptz[], $9::bigint[], $10::integer[], $11::text[], $13::text[], $14::integer[])
          AS b (run_id, status, head, from_count, appended, pending, expiry, token, lease_ms, agent, base, expected)
      ), l AS MATERIALIZED (
        SELECT run_id, token, owner, expires_at FROM ${s}.leases WHERE run_id = ANY ($1::text[])
         ORDER BY run_id COLLATE "C" FOR UPDATE
      ), ok AS MATERIALIZED (
        SELECT b.* FROM b LEFT JOIN l ON l.run_id = b.run_id
         WHERE CASE WHEN b.token IS NULL
           THEN NOT COALESCE(l.owner IS NOT NULL AND l.expires_at > ${now}, false)
           ELSE COALESCE(l.token = b.token AND l.owner IS NOT NULL, false) END
      ), created AS (
        INSERT INTO ${s}.runs
               (run_id, version, status, head, entry_count, pending, pending_expires_at, updated_at, agent, base)
        SELECT run_id, 1, status, head, appended, pending, expiry, ${now}, agent, base FROM ok
         WHERE expected = 0 AND from_count = 0
        ON CONFLICT (run_id) DO NOTHING
        RETURNING run_id, version
      ), updated AS (
        UPDATE ${s}.runs AS x
           SET version = x.version + 1, status = ok.status, head = ok.head, entry_count = x.entry_count + ok.appended,
               pending = ok.pending, pending_expires_at = ok.expiry, updated_at = ${now},
               agent = COALESCE(ok.agent, x.agent), decision = NULL, base = COALESCE(ok.base, x.base)
          FROM ok
         WHERE x.run_id = ok.run_id AND ok.expected > 0 AND x.version = ok.expected AND x.entry_count = ok.from_count
           AND (ok.agent IS NULL OR x.agent IS NULL OR x.agent = ok.agent)
        RETURNING x.run_id, x.version
      ), r AS (
        SELECT m.run_id, m.version, ok.token, ok.lease_ms
          FROM (SELECT * FROM created UNION ALL SELECT * FROM updated) AS m JOIN ok ON ok.run_id = m.run_id
      ), e AS (
        INSERT INTO ${s}.entries (run_id, idx, body)
        SELECT t.run_id, t.idx, t.body FROM unnest($15::text[], $16::text[], $17::integer[]) AS t (body, run_id, idx)
          JOIN r ON r.run_id = t.run_id
      ), n AS (
        UPDATE ${s}.leases AS y SET expires_at = GREATEST(y.expires_at, ${now} + ${ms('r.lease_ms')})
          FROM r WHERE y.run_id = r.run_id AND y.token = r.token
      )
      SELECT r.run_id, r.version, (SELECT ${notify} WHERE EXISTS (SELECT 1 FROM r WHERE r.token IS NULL)) AS notified,
             ${relax} AS relaxed
        FROM r`,
    refusal: `SELECT r.version, r.entry_count, r.status, r.agent, r.decision IS NOT NULL AS decided, l.token::text AS token, l.owner, l.expires_at, l.process, ${nowOf('$2')} AS now
         FROM (SELECT 1) AS one
         LEFT JOIN ${s}.runs r ON r.run_id = $1
         LEFT JOIN ${s}.leases l ON l.run_id = $1`,
    // COLLATE "C": code-point order, the same on every server whatever its locale.
    list: `SELECT ${SUMMARY_COLUMNS} FROM ${s}.runs
        WHERE ($1::text IS NULL OR status = $1) AND ($5::text IS NULL OR agent = $5)
          AND ($3::boolean IS NULL
               OR $3 = (pending_expires_at IS NOT NULL AND pending_expires_at <= ${nowOf('$4')}))
        ORDER BY updated_at, run_id COLLATE "C" LIMIT $2`,
    delete: `WITH ${fence('$3', nowOf('$4'))}
      DELETE FROM ${s}.runs WHERE run_id = $1 AND ($2::integer IS NULL OR version = $2) AND EXISTS (SELECT 1 FROM ok)`,
    deleteEntries: `DELETE FROM ${s}.entries WHERE run_id = $1`,
    // One statement: the row lock of ON CONFLICT serialises claimers; the WHERE, checked on the
    // newest row once locked, lets the claim through only if the lease is free, lapsed or the
    // claimer's own. Every claim makes the next token.
    claim: `INSERT INTO ${s}.leases AS l (run_id, token, owner, expires_at, process)
        VALUES ($1, 1, $2, ${nowOf('$4')} + ${ms('$3')}, $5::text)
        ON CONFLICT (run_id) DO UPDATE
           SET token = l.token + 1, owner = excluded.owner, expires_at = excluded.expires_at, process = excluded.process
         WHERE l.owner IS NULL OR l.expires_at <= ${nowOf('$4')} OR l.owner = excluded.owner
        RETURNING token::text AS token, owner, expires_at`,
    lease: `SELECT token::text AS token, owner, expires_at, process, ${nowOf('$2')} AS now
        FROM ${s}.leases WHERE run_id = $1`,
    renew: `UPDATE ${s}.leases SET expires_at = ${nowOf('$3')} + ${ms('$4')}
        WHERE run_id = $1 AND token = $2::bigint AND owner IS NOT NULL
        RETURNING token::text AS token, owner, expires_at`,
    // The lease rows locked first, in run-id order as every batch statement locks them (two never
    // deadlock); each lease renewed by the rule of `renew` or left alone. A lost lease reads the
    // newest record, which the lock returned.
    renewRuns: `WITH b AS MATERIALIZED (
        SELECT * FROM unnest($1::text[], $2::bigint[], $3::integer[]) WITH ORDINALITY AS b (run_id, token, lease_ms, ord)
      ), k AS MATERIALIZED (
        SELECT run_id, token, owner FROM ${s}.leases WHERE run_id = ANY ($1::text[])
         ORDER BY run_id COLLATE "C" FOR UPDATE
      ), u AS (
        UPDATE ${s}.leases AS l SET expires_at = ${nowOf('$4')} + ${ms('b.lease_ms')}
          FROM b WHERE l.run_id = b.run_id AND l.token = b.token AND l.owner IS NOT NULL
        RETURNING l.run_id, l.token, l.owner, l.expires_at
      )
      SELECT b.ord::integer AS ord, u.token::text AS token, u.owner, u.expires_at,
             k.token::text AS current_token, k.owner AS current_owner
        FROM b LEFT JOIN u ON u.run_id = b.run_id AND u.token = b.token LEFT JOIN k ON k.run_id = b.run_id
       ORDER BY b.ord`,
    // The rows in run-id order, as saveRuns locks them: two batches on the same runs wait, never
    // deadlock (a claim inserts or updates each row in the order it is given).
    claimRuns: `INSERT INTO ${s}.leases AS l (run_id, token, owner, expires_at, process)
        SELECT b.run_id, 1, b.owner, ${nowOf('$4')} + ${ms('b.lease_ms')}, b.process
          FROM unnest($1::text[], $2::text[], $3::integer[], $5::text[]) AS b (run_id, owner, lease_ms, process)
         ORDER BY b.run_id COLLATE "C"
        ON CONFLICT (run_id) DO UPDATE
           SET token = l.token + 1, owner = excluded.owner, expires_at = excluded.expires_at, process = excluded.process
         WHERE l.owner IS NULL OR l.expires_at <= ${nowOf('$4')} OR l.owner = excluded.owner
        RETURNING l.run_id, token::text AS token, owner, expires_at`,
    releaseRuns: `WITH k AS MATERIALIZED (
        SELECT run_id FROM ${s}.leases WHERE run_id = ANY ($1::text[]) ORDER BY run_id COLLATE "C" FOR UPDATE
      ), u AS (
        UPDATE ${s}.leases AS l SET owner = NULL, expires_at = NULL, process = NULL
          FROM unnest($1::text[], $2::bigint[]) AS b (run_id, token)
         WHERE l.run_id = b.run_id AND l.token = b.token AND l.owner IS NOT NULL
           AND EXISTS (SELECT 1 FROM k WHERE k.run_id = b.run_id)
        RETURNING l.run_id
      )
      SELECT u.run_id, (SELECT ${notify} WHERE EXISTS (SELECT 1 FROM u)) AS notified FROM u`,
    release: `WITH u AS (UPDATE ${s}.leases SET owner = NULL, expires_at = NULL, process = NULL
        WHERE run_id = $1 AND token = $2::bigint AND owner IS NOT NULL RETURNING 1)
      SELECT ${notify} AS notified FROM u`,
    // The lease row first, then the run, as every write: the fence of a write without a lease.
    queue: `WITH ${fence('NULL', nowOf('$4'))}, r AS (
        UPDATE ${s}.runs SET version = version + 1, decision = $2, updated_at = ${nowOf('$4')}
         WHERE run_id = $1 AND version = $3 AND status = 'awaiting_approval' AND decision IS NULL
           AND EXISTS (SELECT 1 FROM ok)
        RETURNING version
      )
      SELECT version, ${notify} AS notified FROM r`,
    claimNext: claims.oldest,
    claimNextByClass: claims.byClass,
  };
}
