/**
 * The SQLite store's schema, as numbered steps. Each step is one small function; `migrate`
 * applies the missing ones in one `BEGIN IMMEDIATE` transaction (so two processes opening a
 * new database take turns, and the second finds nothing to do) and records each in
 * `tollgate_migrations`. Never edit a released step: add the next one.
 */
import type { Database } from 'better-sqlite3';
import { SchemaVersionError } from '../../errors.js';
import { earliestExpiry, pendingCallsOf } from '../../store/pending-calls.js';
import type { SqliteSettings } from './settings.js';

export interface Migration {
  version: number;
  name: string;
  up(db: Database): void;
}

/** Runs and their journals: a small head per run plus append-only entries (src/store/contract.ts). */
function createRunsAndEntries(db: Database): void {
  db.exec(`
    CREATE TABLE runs (
      run_id      TEXT PRIMARY KEY,
      version     INTEGER NOT NULL CHECK (version > 0),
      status      TEXT NOT NULL,
      head        TEXT NOT NULL,
      entry_count INTEGER NOT NULL CHECK (entry_count >= 0),
      pending     TEXT,  -- JSON of the pending call, for the inbox
      updated_at  TEXT NOT NULL  -- ISO-8601 UTC with milliseconds: sorts as text
    ) WITHOUT ROWID;
    CREATE TABLE entries (
      run_id TEXT NOT NULL,
      idx    INTEGER NOT NULL CHECK (idx >= 0),
      body   TEXT NOT NULL,
      PRIMARY KEY (run_id, idx)
    ) WITHOUT ROWID;`);
}

/** `list` orders by (updated_at, run_id); the inbox filters by status first. */
function indexListing(db: Database): void {
  db.exec(`
    CREATE INDEX runs_by_status ON runs (status, updated_at, run_id);
    CREATE INDEX runs_by_update ON runs (updated_at, run_id);`);
}

/**
 * Leases: one row per run id ever claimed, apart from `runs` because a run is claimed before its
 * first save, and kept when the run is deleted so that its fencing token only grows. Times are
 * ms since the epoch on the store's clock; `owner` and `expires_at` are null once released.
 */
function createLeases(db: Database): void {
  db.exec(`
    CREATE TABLE leases (
      run_id     TEXT PRIMARY KEY,
      token      INTEGER NOT NULL CHECK (token > 0),
      owner      TEXT,
      expires_at INTEGER
    ) WITHOUT ROWID;`);
}

/**
 * Several pending calls per run: `pending` now holds a JSON array (a row written before holds
 * one object, read as a list of one), and `pending_expires_at` the earliest `expiresAt` among
 * them (ms since the epoch; null when none expires), for `list({ expired })`. Existing rows get
 * theirs from their one pending call.
 */
function addPendingExpiry(db: Database): void {
  db.exec('ALTER TABLE runs ADD COLUMN pending_expires_at INTEGER');
  const rows = db.prepare('SELECT run_id, pending FROM runs WHERE pending IS NOT NULL').all() as {
    run_id: string;
    pending: string;
  }[];
  const set = db.prepare('UPDATE runs SET pending_expires_at = ? WHERE run_id = ?');
  for (const row of rows) set.run(earliestExpiry(pendingCallsOf(JSON.parse(row.pending))), row.run_id);
}

/**
 * Workers: `agent` (the agent's name, null for runs saved without one) and `decision` (a
 * recorded decision as JSON text, or null). Existing rows get null for both. `claimNext` and
 * `list({ agent })` read runs of some agents oldest first.
 */
function addAgentAndDecision(db: Database): void {
  db.exec(`
    ALTER TABLE runs ADD COLUMN agent TEXT;
    ALTER TABLE runs ADD COLUMN decision TEXT;
    CREATE INDEX runs_by_agent ON runs (agent, updated_at, run_id);`);
}

/**
 * Group budgets (store/groups.ts): a budget per group, spending per group and window (a UTC day
 * 'YYYY-MM-DD', or 'total') in whole micro-dollars and tokens, and the group of each run that
 * joined one — apart from `runs`, because a run joins before its first save, and kept when the
 * run is deleted so that a run id never leaves its group.
 */
function createGroups(db: Database): void {
  db.exec(`
    CREATE TABLE group_budgets (
      grp            TEXT PRIMARY KEY,
      max_cost_micro INTEGER CHECK (max_cost_micro > 0),
      max_tokens     INTEGER CHECK (max_tokens >= 0),
      period         TEXT NOT NULL CHECK (period IN ('day', 'total'))
    ) WITHOUT ROWID;
    CREATE TABLE group_spend (
      grp        TEXT NOT NULL,
      win        TEXT NOT NULL,
      tokens     INTEGER NOT NULL CHECK (tokens >= 0),
      cost_micro INTEGER NOT NULL CHECK (cost_micro >= 0),
      PRIMARY KEY (grp, win)
    ) WITHOUT ROWID;
    CREATE TABLE run_groups (
      run_id TEXT PRIMARY KEY,
      grp    TEXT NOT NULL
    ) WITHOUT ROWID;`);
}

/**
 * Head deltas (checkpoint/head-delta.ts): `base`, the run's last base head (null until a save
 * gives one). Existing rows get null: their heads are whole.
 */
function addBase(db: Database): void {
  db.exec('ALTER TABLE runs ADD COLUMN base TEXT');
}

/**
 * Listing indexes a running run's saves do not rewrite (sqlite/listing.ts): every save changes
 * `updated_at`, and each index keyed by it cost a page written to the WAL per save. The status
 * index keeps the runs paused or ended, the running ones get an index keyed by run id alone, and
 * the agent index keeps only runs that have an agent.
 */
function partialListingIndexes(db: Database): void {
  db.exec(`
    DROP INDEX runs_by_status;
    DROP INDEX runs_by_agent;
    CREATE INDEX runs_by_status ON runs (status, updated_at, run_id) WHERE status <> 'running';
    CREATE INDEX runs_running ON runs (run_id) WHERE status = 'running';
    CREATE INDEX runs_by_agent ON runs (agent, updated_at, run_id) WHERE agent IS NOT NULL;`);
}

/**
 * Group holds (store/groups.ts, reserve then settle): what each run holds of its group's window
 * for the model call it is making. A hold counts while the run's lease with its token is live, and
 * is charged as spent once it is not (`lapsedHold`), so it is read joined with `leases`; one per
 * group and run.
 */
function createGroupHolds(db: Database): void {
  db.exec(`
    CREATE TABLE group_holds (
      grp        TEXT NOT NULL,
      run_id     TEXT NOT NULL,
      token      INTEGER NOT NULL,
      win        TEXT NOT NULL,
      tokens     INTEGER NOT NULL CHECK (tokens >= 0),
      cost_micro INTEGER NOT NULL CHECK (cost_micro >= 0),
      PRIMARY KEY (grp, run_id)
    ) WITHOUT ROWID;`);
}

/**
 * The holder's process with its lease (`process`: JSON of a `ProcessIdentity`, null when unknown
 * or released), so that a claimer on the same machine can prove a holder dead and release its
 * lease at once. Existing rows get null: their holders are left to lapse.
 */
function addLeaseProcess(db: Database): void {
  db.exec('ALTER TABLE leases ADD COLUMN process TEXT');
}

/**
 * `claimNext`'s order (claim-order.ts, sqlite/queue.ts): an index per class that is few where the
 * backlog is many. None holds a row that a save of a running run writes: it has no decision, is
 * not awaiting, and extends its lease without setting the owner (sqlite/queue.ts `extend`).
 */
function indexClaimOrder(db: Database): void {
  db.exec(`
    CREATE INDEX runs_decided ON runs (updated_at, run_id) WHERE decision IS NOT NULL;
    CREATE INDEX runs_expiring ON runs (pending_expires_at)
      WHERE status = 'awaiting_approval' AND pending_expires_at IS NOT NULL;
    CREATE INDEX leases_held ON leases (run_id) WHERE owner IS NOT NULL;`);
}

export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'runs and entries', up: createRunsAndEntries },
  { version: 2, name: 'listing indexes', up: indexListing },
  { version: 3, name: 'leases', up: createLeases },
  { version: 4, name: 'pending calls expiry', up: addPendingExpiry },
  { version: 5, name: 'agent and decision', up: addAgentAndDecision },
  { version: 6, name: 'group budgets', up: createGroups },
  { version: 7, name: 'head bases', up: addBase },
  { version: 8, name: 'partial listing indexes', up: partialListingIndexes },
  { version: 9, name: 'group holds', up: createGroupHolds },
  { version: 10, name: 'lease holder process', up: addLeaseProcess },
  { version: 11, name: 'claim order indexes', up: indexClaimOrder },
];

/** The schema version this code writes and reads. */
export const SCHEMA_VERSION = MIGRATIONS.at(-1)?.version ?? 0;

function currentVersion(db: Database): number {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tollgate_migrations'").get();
  if (!table) return 0;
  const row = db.prepare('SELECT max(version) AS v FROM tollgate_migrations').get() as { v: number | null };
  return row.v ?? 0;
}

function refuseNewer(found: number, supported: number, file: string): void {
  if (found > supported) {
    throw new SchemaVersionError(
      `sqlite: ${file} has schema version ${found}, newer than this Tollgate knows (${supported}); upgrade Tollgate`,
      found,
      supported,
    );
  }
}

/**
 * Brings the database up to the newest step of `migrations`. Opening an up-to-date database
 * only reads one row. All steps run in one transaction: a failing step leaves nothing behind.
 * @returns the schema version.
 * @throws SchemaVersionError when the database is newer than `migrations` know.
 */
export function migrate(db: Database, migrations: readonly Migration[] = MIGRATIONS): number {
  const latest = migrations.at(-1)?.version ?? 0;
  const seen = currentVersion(db);
  refuseNewer(seen, latest, db.name);
  if (seen === latest) return latest;
  const apply = db.transaction(() => {
    db.exec(`
      CREATE TABLE IF NOT EXISTS tollgate_migrations (
        version    INTEGER PRIMARY KEY,
        name       TEXT NOT NULL,
        applied_at TEXT NOT NULL
      )`);
    const current = currentVersion(db); // again, now that we hold the write lock
    refuseNewer(current, latest, db.name);
    const record = db.prepare('INSERT INTO tollgate_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    for (const step of migrations) {
      if (step.version <= current) continue;
      step.up(db);
      record.run(step.version, step.name, new Date().toISOString());
    }
  });
  apply.immediate();
  return latest;
}

/** What `SqliteStore.settings` shows. */
export function settingsOf(db: Database): SqliteSettings {
  const level = db.pragma('synchronous', { simple: true }) as number;
  return {
    journalMode: db.pragma('journal_mode', { simple: true }) as string,
    synchronous: ['OFF', 'NORMAL', 'FULL', 'EXTRA'][level] ?? String(level),
    busyTimeoutMs: db.pragma('busy_timeout', { simple: true }) as number,
    schemaVersion: (db.prepare('SELECT max(version) FROM tollgate_migrations').pluck().get() as number) ?? 0,
  };
}
