/**
 * The systems the chaos suite's side effects write to, owned by the test: one table of every
 * attempt (nothing deduplicated, so a duplicate is counted, not hidden by a unique key) and one of
 * fencing tokens, the largest seen per key. An attempt with a token smaller than that is refused
 * (Kleppmann's fencing) and recorded as refused. `lookup` — what the payment tool's `verify` asks —
 * first raises the key's token to the asker's, so that a late request from an owner that lost the
 * run is refused from then on, and only then looks for an accepted attempt: without the raise, a
 * request still on the wire could land after the look-up said "not done", and the call would be
 * made twice on one approval.
 *
 * Postgres: two tables in the store's schema, reached directly (never through a worker's proxy:
 * the downstream system is not the store). SQLite: a database file of its own.
 */
import type { JsonObject } from '../../src/index.js';

export type DownstreamSpec = { kind: 'postgres'; url: string; schema: string } | { kind: 'sqlite'; file: string };

/** One request reaching the downstream system. */
export interface Attempt {
  tool: string;
  runId: string;
  key: string;
  /** The approval the call ran under (`ctx.approvedCallId`). */
  callId: string | null;
  /** The run's fencing token the call was given (`ctx.fence`). */
  fence: number | null;
  pid: number;
  args: JsonObject;
  /** When the tool's `fn` was called (ms since the epoch, the worker's clock). */
  startedAt: number;
}

export interface AttemptRow extends Attempt {
  id: number;
  accepted: boolean;
  /** When the request was sent, after the call's slow part (the worker's clock). */
  sentAt: number;
}

export interface Downstream {
  setup(): Promise<void>;
  /** Records the attempt; true if its token is at least the largest seen for its key (it took effect). */
  attempt(attempt: Attempt): Promise<boolean>;
  /** Raises the key's token to `fence` (unless null), then returns the accepted attempt for the key, if any. */
  lookup(key: string, fence: number | null): Promise<AttemptRow | null>;
  rows(): Promise<AttemptRow[]>;
  close(): Promise<void>;
}

interface Row {
  id: number;
  tool: string;
  run_id: string;
  key: string;
  call_id: string | null;
  fence: number | null;
  pid: number;
  args: string;
  started_at: number;
  sent_at: number;
  accepted: boolean | number;
}

const rowOf = (r: Row): AttemptRow => ({
  id: Number(r.id),
  tool: r.tool,
  runId: r.run_id,
  key: r.key,
  callId: r.call_id,
  fence: r.fence === null ? null : Number(r.fence),
  pid: Number(r.pid),
  args: JSON.parse(r.args) as JsonObject,
  startedAt: Number(r.started_at),
  sentAt: Number(r.sent_at),
  accepted: Boolean(r.accepted),
});

const COLUMNS = 'id, tool, run_id, key, call_id, fence, pid, args, started_at, sent_at, accepted';

export function openDownstream(spec: DownstreamSpec): Promise<Downstream> {
  return spec.kind === 'postgres' ? postgres(spec) : sqlite(spec);
}

async function postgres(spec: { url: string; schema: string }): Promise<Downstream> {
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({ connectionString: spec.url, max: 2, connectionTimeoutMillis: 5000 });
  pool.on('error', () => {});
  const s = `"${spec.schema}"`;
  const raise = async (key: string, fence: number) => {
    // Its own statement: it waits on the row lock of an attempt being written with the key, and
    // the look-up after it reads with a snapshot that sees that attempt.
    await pool.query(
      `INSERT INTO ${s}.downstream_fences (key, token) VALUES ($1, $2)
       ON CONFLICT (key) DO UPDATE SET token = GREATEST(${s}.downstream_fences.token, EXCLUDED.token)`,
      [key, fence],
    );
  };
  return {
    async setup() {
      await pool.query(`
        CREATE SCHEMA IF NOT EXISTS ${s};
        CREATE TABLE IF NOT EXISTS ${s}.downstream_fences (key text PRIMARY KEY, token bigint NOT NULL);
        CREATE TABLE IF NOT EXISTS ${s}.downstream_attempts (id serial PRIMARY KEY, tool text NOT NULL,
          run_id text NOT NULL, key text NOT NULL, call_id text, fence bigint, pid integer NOT NULL,
          args text NOT NULL, started_at bigint NOT NULL, sent_at bigint NOT NULL, accepted boolean NOT NULL);`);
    },
    async attempt(a) {
      const values = [
        a.tool,
        a.runId,
        a.key,
        a.callId,
        a.fence,
        a.pid,
        JSON.stringify(a.args),
        a.startedAt,
        Date.now(),
      ];
      if (a.fence === null) {
        await pool.query(
          `INSERT INTO ${s}.downstream_attempts (tool, run_id, key, call_id, fence, pid, args, started_at, sent_at, accepted)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, false)`,
          values,
        );
        return false;
      }
      // One statement: the upsert takes the key's row lock and leaves the larger token; the
      // attempt took effect if that is its own.
      const { rows } = await pool.query<{ accepted: boolean }>(
        `WITH f AS (
           INSERT INTO ${s}.downstream_fences (key, token) VALUES ($3, $5)
           ON CONFLICT (key) DO UPDATE SET token = GREATEST(${s}.downstream_fences.token, EXCLUDED.token)
           RETURNING token)
         INSERT INTO ${s}.downstream_attempts (tool, run_id, key, call_id, fence, pid, args, started_at, sent_at, accepted)
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, f.token = $5 FROM f RETURNING accepted`,
        values,
      );
      return rows[0]?.accepted === true;
    },
    async lookup(key, fence) {
      if (fence !== null) await raise(key, fence);
      const { rows } = await pool.query<Row>(
        `SELECT ${COLUMNS} FROM ${s}.downstream_attempts WHERE key = $1 AND accepted ORDER BY id LIMIT 1`,
        [key],
      );
      return rows[0] ? rowOf(rows[0]) : null;
    },
    async rows() {
      return (await pool.query<Row>(`SELECT ${COLUMNS} FROM ${s}.downstream_attempts ORDER BY id`)).rows.map(rowOf);
    },
    async close() {
      await pool.end();
    },
  };
}

async function sqlite(spec: { file: string }): Promise<Downstream> {
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(spec.file);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 10000');
  const insert = (a: Attempt, accepted: boolean) =>
    db
      .prepare(
        `INSERT INTO downstream_attempts (tool, run_id, key, call_id, fence, pid, args, started_at, sent_at, accepted)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        a.tool,
        a.runId,
        a.key,
        a.callId,
        a.fence,
        a.pid,
        JSON.stringify(a.args),
        a.startedAt,
        Date.now(),
        accepted ? 1 : 0,
      );
  const raise = (key: string, fence: number): number => {
    db.prepare(
      `INSERT INTO downstream_fences (key, token) VALUES (?, ?)
       ON CONFLICT (key) DO UPDATE SET token = MAX(token, excluded.token)`,
    ).run(key, fence);
    return (db.prepare('SELECT token FROM downstream_fences WHERE key = ?').get(key) as { token: number }).token;
  };
  // IMMEDIATE: the write lock is taken before the read, so attempts and look-ups from all the
  // processes take turns.
  const attempt = db.transaction((a: Attempt): boolean => {
    const accepted = a.fence !== null && raise(a.key, a.fence) === a.fence;
    insert(a, accepted);
    return accepted;
  });
  const lookup = db.transaction((key: string, fence: number | null): Row | undefined => {
    if (fence !== null) raise(key, fence);
    return db
      .prepare(`SELECT ${COLUMNS} FROM downstream_attempts WHERE key = ? AND accepted ORDER BY id LIMIT 1`)
      .get(key) as Row | undefined;
  });
  return {
    async setup() {
      db.exec(`
        CREATE TABLE IF NOT EXISTS downstream_fences (key TEXT PRIMARY KEY, token INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS downstream_attempts (id INTEGER PRIMARY KEY, tool TEXT NOT NULL,
          run_id TEXT NOT NULL, key TEXT NOT NULL, call_id TEXT, fence INTEGER, pid INTEGER NOT NULL,
          args TEXT NOT NULL, started_at INTEGER NOT NULL, sent_at INTEGER NOT NULL, accepted INTEGER NOT NULL);`);
    },
    async attempt(a) {
      return attempt.immediate(a);
    },
    async lookup(key, fence) {
      const row = lookup.immediate(key, fence);
      return row ? rowOf(row) : null;
    },
    async rows() {
      return (db.prepare(`SELECT ${COLUMNS} FROM downstream_attempts ORDER BY id`).all() as Row[]).map(rowOf);
    },
    async close() {
      db.close();
    },
  };
}
