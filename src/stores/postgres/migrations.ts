/**
 * The Postgres store's schema, as numbered migration steps. Each step is one small function
 * that takes the quoted schema name; `migrate` applies the missing ones in one transaction,
 * serialised across processes and machines by an advisory lock, and records each in
 * `tollgate_migrations`. Never edit a released step: add the next one.
 */
import type { QueryResult, QueryResultRow } from 'pg';
import { SchemaVersionError } from '../../errors.js';
import { earliestExpiry, pendingCallsOf } from '../../store/pending-calls.js';

/** A connection as migrations and the store use it: every query bounded by the store's query timeout. */
export interface Sql {
  query<R extends QueryResultRow = Record<string, unknown>>(text: string, values?: unknown[]): Promise<QueryResult<R>>;
}

export interface Migration {
  version: number;
  name: string;
  up(client: Sql, schema: string): Promise<void>;
}

/**
 * Runs and their journals. A run is a small head plus append-only entries (src/store/contract.ts).
 * `pending` is JSON text, not jsonb: jsonb rejects `\u0000` and lone surrogates, which tool
 * arguments may legitimately hold, and a store must round-trip any run.
 */
async function createRunsAndEntries(client: Sql, s: string): Promise<void> {
  await client.query(`
    CREATE TABLE ${s}.runs (
      run_id      text PRIMARY KEY,
      version     integer NOT NULL CHECK (version > 0),
      status      text NOT NULL,
      head        text NOT NULL,
      entry_count integer NOT NULL CHECK (entry_count >= 0),
      pending     text,
      updated_at  timestamptz NOT NULL
    );
    CREATE TABLE ${s}.entries (
      run_id text NOT NULL REFERENCES ${s}.runs (run_id) ON DELETE CASCADE,
      idx    integer NOT NULL CHECK (idx >= 0),
      body   text NOT NULL,
      PRIMARY KEY (run_id, idx)
    );`);
}

/** `list` orders by (updated_at, run_id); the inbox filters by status first. */
async function indexListing(client: Sql, s: string): Promise<void> {
  await client.query(`
    CREATE INDEX runs_by_status ON ${s}.runs (status, updated_at, run_id COLLATE "C");
    CREATE INDEX runs_by_update ON ${s}.runs (updated_at, run_id COLLATE "C");`);
}

/**
 * Leases: one row per run id ever claimed, apart from `runs` because a run is claimed before its
 * first save (so no foreign key), and kept when the run is deleted so that its fencing token only
 * grows. `owner` and `expires_at` are null once released.
 */
async function createLeases(client: Sql, s: string): Promise<void> {
  await client.query(`
    CREATE TABLE ${s}.leases (
      run_id     text PRIMARY KEY,
      token      bigint NOT NULL CHECK (token > 0),
      owner      text,
      expires_at timestamptz
    );`);
}

/**
 * Several pending calls per run: `pending` now holds a JSON array (a row written before holds
 * one object, read as a list of one), and `pending_expires_at` the earliest `expiresAt` among
 * them (null when none expires), for `list({ expired })`. Existing rows get theirs from their
 * one pending call, computed here rather than in SQL: `pending` is text that `json` functions
 * may refuse (lone surrogates in arguments).
 */
async function addPendingExpiry(client: Sql, s: string): Promise<void> {
  await client.query(`ALTER TABLE ${s}.runs ADD COLUMN pending_expires_at timestamptz`);
  const { rows } = await client.query<{ run_id: string; pending: string }>(
    `SELECT run_id, pending FROM ${s}.runs WHERE pending IS NOT NULL`,
  );
  const ids: string[] = [];
  const times: string[] = [];
  for (const row of rows) {
    const earliest = earliestExpiry(pendingCallsOf(JSON.parse(row.pending)));
    if (earliest === null) continue;
    ids.push(row.run_id);
    times.push(new Date(earliest).toISOString());
  }
  await client.query(
    `UPDATE ${s}.runs r SET pending_expires_at = t.at
       FROM unnest($1::text[], $2::timestamptz[]) AS t (run_id, at) WHERE r.run_id = t.run_id`,
    [ids, times],
  );
}

/**
 * Workers: `agent` (the agent's name, null for runs saved without one) and `decision` (a
 * recorded decision as JSON text, like `pending`: jsonb would refuse some strings; null when
 * none). Existing rows get null for both. `claimNext` and `list({ agent })` read the runs of
 * some agents oldest first.
 */
async function addAgentAndDecision(client: Sql, s: string): Promise<void> {
  await client.query(`
    ALTER TABLE ${s}.runs ADD COLUMN agent text, ADD COLUMN decision text;
    CREATE INDEX runs_by_agent ON ${s}.runs (agent, updated_at, run_id COLLATE "C");`);
}

/**
 * Group budgets (store/groups.ts): a budget per group, spending per group and window (a UTC day
 * 'YYYY-MM-DD', or 'total') in whole micro-dollars and tokens, and the group of each run that
 * joined one — apart from `runs`, because a run joins before its first save, and kept when the
 * run is deleted so that a run id never leaves its group.
 */
async function createGroups(client: Sql, s: string): Promise<void> {
  await client.query(`
    CREATE TABLE ${s}.group_budgets (
      grp            text PRIMARY KEY,
      max_cost_micro bigint CHECK (max_cost_micro > 0),
      max_tokens     bigint CHECK (max_tokens >= 0),
      period         text NOT NULL CHECK (period IN ('day', 'total'))
    );
    CREATE TABLE ${s}.group_spend (
      grp        text NOT NULL,
      win        text NOT NULL,
      tokens     bigint NOT NULL CHECK (tokens >= 0),
      cost_micro bigint NOT NULL CHECK (cost_micro >= 0),
      PRIMARY KEY (grp, win)
    );
    CREATE TABLE ${s}.run_groups (
      run_id text PRIMARY KEY,
      grp    text NOT NULL
    );`);
}

/**
 * Head deltas (checkpoint/head-delta.ts): `base`, the last base a save gave, which a delta head
 * is joined with; a save without one keeps it. Existing rows get null: their heads are whole.
 */
async function addBase(client: Sql, s: string): Promise<void> {
  await client.query(`ALTER TABLE ${s}.runs ADD COLUMN base text`);
}

/**
 * Entries without a foreign key to their run: its check ran in a trigger for every entry a save
 * inserted, a large part of a save's time. A save inserts entries only for the run row
 * it made or updated in the same statement, and `delete` removes a run's entries itself, in its
 * own transaction (postgres.ts), which the key's `ON DELETE CASCADE` did before.
 */
async function dropEntriesKey(client: Sql, s: string): Promise<void> {
  await client.query(`ALTER TABLE ${s}.entries DROP CONSTRAINT IF EXISTS entries_run_id_fkey`);
}

/**
 * Group holds (store/groups.ts, reserve then settle): what each run holds of its group's window
 * for the model call it is making. A hold counts while the run's lease with its token is live, and
 * is charged as spent once it is not (`lapsedHold`), so it is read joined with `leases`; one per
 * group and run.
 */
async function createGroupHolds(client: Sql, s: string): Promise<void> {
  await client.query(`
    CREATE TABLE ${s}.group_holds (
      grp        text NOT NULL,
      run_id     text NOT NULL,
      token      bigint NOT NULL,
      win        text NOT NULL,
      tokens     bigint NOT NULL CHECK (tokens >= 0),
      cost_micro bigint NOT NULL CHECK (cost_micro >= 0),
      PRIMARY KEY (grp, run_id)
    );`);
}

/**
 * The holder's process with its lease (`process`: JSON text of a `ProcessIdentity`, null when
 * unknown or released), so that a claimer on the same machine can prove a holder dead and release
 * its lease at once. Existing rows get null: their holders are left to lapse.
 */
async function addLeaseProcess(client: Sql, s: string): Promise<void> {
  await client.query(`ALTER TABLE ${s}.leases ADD COLUMN process text`);
}

/**
 * `claimNext`'s order (claim-order.ts, claim-sql.ts): an index per class that is few where the
 * backlog is many. Each holds no row a save of a running run writes (no decision, not awaiting,
 * and a lease's owner is not changed by an extension: its row is still updated in place).
 */
async function indexClaimOrder(client: Sql, s: string): Promise<void> {
  await client.query(`
    CREATE INDEX runs_decided ON ${s}.runs (updated_at, run_id COLLATE "C") WHERE decision IS NOT NULL;
    CREATE INDEX runs_expiring ON ${s}.runs (pending_expires_at)
      WHERE status = 'awaiting_approval' AND pending_expires_at IS NOT NULL;
    CREATE INDEX leases_held ON ${s}.leases (run_id) WHERE owner IS NOT NULL;`);
}

export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'runs and entries', up: createRunsAndEntries },
  { version: 2, name: 'listing indexes', up: indexListing },
  { version: 3, name: 'leases', up: createLeases },
  { version: 4, name: 'pending calls expiry', up: addPendingExpiry },
  { version: 5, name: 'agent and decision', up: addAgentAndDecision },
  { version: 6, name: 'group budgets', up: createGroups },
  { version: 7, name: 'head base', up: addBase },
  { version: 8, name: 'entries without a foreign key', up: dropEntriesKey },
  { version: 9, name: 'group holds', up: createGroupHolds },
  { version: 10, name: 'lease holder process', up: addLeaseProcess },
  { version: 11, name: 'claim order indexes', up: indexClaimOrder },
];

/** The schema version this code writes and reads. */
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0;

/** One lock id space for Tollgate's migrations; the second key is the schema's hash. */
const LOCK_CLASS = 0x70_6c_67; // 'tlg'

/**
 * Brings `schema` (unquoted name) up to the newest step of `migrations` (`SCHEMA_VERSION`). Safe
 * to call from many processes at once: the advisory lock makes them take turns, and the later
 * ones find nothing to do.
 * @returns the schema version.
 * @throws SchemaVersionError when the database holds a newer schema than `migrations` know.
 */
export async function migrate(
  client: Sql,
  schema: string,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<number> {
  const latest = migrations.at(-1)?.version ?? 0;
  const s = `"${schema}"`;
  // Fast path, one round trip: every process opening a store pays this, and the locked
  // transaction below is many times slower on a fresh connection.
  try {
    const { rows } = await client.query<{ v: number | null }>(`SELECT max(version) AS v FROM ${s}.tollgate_migrations`);
    if (rows[0]?.v === latest) return latest;
  } catch (error) {
    // No schema or no table yet (42P01): the locked path creates them.
    if ((error as { code?: string }).code !== '42P01') throw error;
  }
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK_CLASS, schema]);
    // CREATE SCHEMA IF NOT EXISTS still needs the CREATE privilege: look first, so a user
    // without it can use a schema an administrator made.
    const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${s}`);
    await client.query(`
      CREATE TABLE IF NOT EXISTS ${s}.tollgate_migrations (
        version    integer PRIMARY KEY,
        name       text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
    const { rows } = await client.query<{ v: number | null }>(`SELECT max(version) AS v FROM ${s}.tollgate_migrations`);
    const current = rows[0]?.v ?? 0;
    if (current > latest) {
      throw new SchemaVersionError(
        `postgres: schema ${s} is at version ${current}, newer than this Tollgate knows (${latest}); upgrade Tollgate`,
        current,
        latest,
      );
    }
    for (const step of migrations) {
      if (step.version <= current) continue;
      await step.up(client, s);
      await client.query(`INSERT INTO ${s}.tollgate_migrations (version, name) VALUES ($1, $2)`, [
        step.version,
        step.name,
      ]);
    }
    await client.query('COMMIT');
    return latest;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}
