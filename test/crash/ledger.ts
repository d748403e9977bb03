/**
 * The crash test's world: a checkpoint store and, in the same database (for the file store, in an
 * SQLite database beside it), the ledger that the side-effecting tools write to. Two tables:
 * - `ledger_pay`: one row per call of the non-idempotent `pay` tool, nothing deduplicated;
 * - `ledger_ship`: the idempotent `ship` tool's effect, UNIQUE on the idempotency key
 *   (INSERT … ON CONFLICT), counting how often it was called for that key.
 * Every row records the approved call id the tool was given (`ctx.approvedCallId`).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { CheckpointStore } from '../../src/index.js';

export type WorldSpec =
  | { kind: 'postgres'; url: string; schema: string }
  | { kind: 'sqlite'; file: string }
  /** The file store in `dir/store`, the ledger in an SQLite database beside it (`dir/ledger.db`). */
  | { kind: 'file'; dir: string };

interface LedgerRow {
  key: string;
  call_id: string;
  run_id: string;
}

export interface PayRow extends LedgerRow {
  /** The process that paid (so a post-mortem can tell which child, alive or killed, did it). */
  pid: number;
}

export interface ShipRow extends LedgerRow {
  calls: number;
}

export interface World {
  store: CheckpointStore;
  /** Creates the ledger tables (the parent, once, before any child). */
  setup(): Promise<void>;
  /** The non-idempotent effect: one more row, whatever the key. */
  pay(key: string, callId: string | null, runId: string): Promise<void>;
  /** The idempotent effect: at most one row per key. */
  ship(key: string, callId: string | null, runId: string): Promise<void>;
  payRows(): Promise<PayRow[]>;
  shipRows(): Promise<ShipRow[]>;
  close(): Promise<void>;
}

export async function openWorld(spec: WorldSpec): Promise<World> {
  if (spec.kind === 'postgres') return postgresWorld(spec);
  return spec.kind === 'sqlite' ? sqliteWorld(spec) : fileWorld(spec);
}

/** Drivers are loaded lazily: a child on one database does not pay for the other's start-up. */
async function postgresWorld(spec: { url: string; schema: string }): Promise<World> {
  const { default: pg } = await import('pg');
  const { PostgresStore } = await import('../../src/stores/postgres.js');
  // Few connections: a new Postgres connection costs ~20 ms here, and every child opens its own.
  const pool = new pg.Pool({ connectionString: spec.url, max: 2, connectionTimeoutMillis: 5000 });
  pool.on('error', () => {});
  const s = `"${spec.schema}"`;
  const store = new PostgresStore(pool, { schema: spec.schema });
  return {
    store,
    async setup() {
      await store.migrate();
      await pool.query(`
        CREATE TABLE IF NOT EXISTS ${s}.ledger_pay (id serial PRIMARY KEY, key text NOT NULL, call_id text, run_id text NOT NULL, pid integer NOT NULL);
        CREATE TABLE IF NOT EXISTS ${s}.ledger_ship (key text PRIMARY KEY, call_id text, run_id text NOT NULL, calls integer NOT NULL);`);
    },
    async pay(key, callId, runId) {
      await pool.query(`INSERT INTO ${s}.ledger_pay (key, call_id, run_id, pid) VALUES ($1, $2, $3, $4)`, [
        key,
        callId,
        runId,
        process.pid,
      ]);
    },
    async ship(key, callId, runId) {
      await pool.query(
        `INSERT INTO ${s}.ledger_ship (key, call_id, run_id, calls) VALUES ($1, $2, $3, 1)
         ON CONFLICT (key) DO UPDATE SET calls = ${s}.ledger_ship.calls + 1`,
        [key, callId, runId],
      );
    },
    async payRows() {
      return (await pool.query<PayRow>(`SELECT key, call_id, run_id, pid FROM ${s}.ledger_pay ORDER BY id`)).rows;
    },
    async shipRows() {
      return (await pool.query<ShipRow>(`SELECT key, call_id, run_id, calls FROM ${s}.ledger_ship ORDER BY key`)).rows;
    },
    async close() {
      await store.close();
      await pool.end();
    },
  };
}

async function sqliteWorld(spec: { file: string }): Promise<World> {
  const { SqliteStore } = await import('../../src/stores/sqlite.js');
  return sqliteLedger(SqliteStore.open(spec.file), spec.file);
}

async function fileWorld(spec: { dir: string }): Promise<World> {
  const { FileStore } = await import('../../src/stores/file.js');
  mkdirSync(spec.dir, { recursive: true });
  return sqliteLedger(new FileStore({ dir: join(spec.dir, 'store') }), join(spec.dir, 'ledger.db'));
}

/** `store` with the ledger in the SQLite database `file` (the store's own, or one beside it). */
async function sqliteLedger(store: CheckpointStore, file: string): Promise<World> {
  const { default: Database } = await import('better-sqlite3');
  // The ledger's own connection (WAL: readers and one writer at a time).
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  return {
    store,
    async setup() {
      db.exec(`
        CREATE TABLE IF NOT EXISTS ledger_pay (id INTEGER PRIMARY KEY, key TEXT NOT NULL, call_id TEXT, run_id TEXT NOT NULL, pid INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS ledger_ship (key TEXT PRIMARY KEY, call_id TEXT, run_id TEXT NOT NULL, calls INTEGER NOT NULL);`);
    },
    async pay(key, callId, runId) {
      db.prepare('INSERT INTO ledger_pay (key, call_id, run_id, pid) VALUES (?, ?, ?, ?)').run(
        key,
        callId,
        runId,
        process.pid,
      );
    },
    async ship(key, callId, runId) {
      db.prepare(
        `INSERT INTO ledger_ship (key, call_id, run_id, calls) VALUES (?, ?, ?, 1)
         ON CONFLICT (key) DO UPDATE SET calls = calls + 1`,
      ).run(key, callId, runId);
    },
    async payRows() {
      return db.prepare('SELECT key, call_id, run_id, pid FROM ledger_pay ORDER BY id').all() as PayRow[];
    },
    async shipRows() {
      return db.prepare('SELECT key, call_id, run_id, calls FROM ledger_ship ORDER BY key').all() as ShipRow[];
    },
    async close() {
      await store.close();
      db.close();
    },
  };
}
