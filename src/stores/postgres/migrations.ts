/**
 * The Postgres store's schema, as numbered migration steps. Each step is one small function
 * that takes the quoted schema name; `migrate` applies the missing ones in one transaction,
 * serialised across processes and machines by an advisory lock, and records each in
 * `tollgate_migrations`. Never edit a released step: add the next one.
 */
import type { QueryResult, QueryResultRow } from 'pg';
import { SchemaVersionError } from '../../errors.js';

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
 * Runs and their journals. A run is a small head plus append-only entries (src/store.ts).
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

export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'runs and entries', up: createRunsAndEntries },
  { version: 2, name: 'listing indexes', up: indexListing },
];

/** The schema version this code writes and reads. */
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0;

/** One lock id space for Tollgate's migrations; the second key is the schema's hash. */
const LOCK_CLASS = 0x70_6c_67; // 'tlg'

/**
 * Brings `schema` (unquoted name) up to `SCHEMA_VERSION`. Safe to call from many processes at
 * once: the advisory lock makes them take turns, and the later ones find nothing to do.
 * @returns the schema version.
 * @throws SchemaVersionError when the database holds a newer schema than this code knows.
 */
export async function migrate(client: Sql, schema: string): Promise<number> {
  const s = `"${schema}"`;
  // Fast path, one round trip: every process opening a store pays this, and the locked
  // transaction below costs ~40 ms on a fresh connection (measured on the CI machine).
  try {
    const { rows } = await client.query<{ v: number | null }>(`SELECT max(version) AS v FROM ${s}.tollgate_migrations`);
    if (rows[0]?.v === SCHEMA_VERSION) return SCHEMA_VERSION;
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
    if (current > SCHEMA_VERSION) {
      throw new SchemaVersionError(
        `postgres: schema ${s} is at version ${current}, newer than this Tollgate knows (${SCHEMA_VERSION}); upgrade Tollgate`,
        current,
        SCHEMA_VERSION,
      );
    }
    for (const step of MIGRATIONS) {
      if (step.version <= current) continue;
      await step.up(client, s);
      await client.query(`INSERT INTO ${s}.tollgate_migrations (version, name) VALUES ($1, $2)`, [
        step.version,
        step.name,
      ]);
    }
    await client.query('COMMIT');
    return SCHEMA_VERSION;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}
