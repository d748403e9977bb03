/**
 * The floor: a hand-written async loop doing the same work with no framework. The policy is
 * given the history array itself (no copy), the tool's result is appended, and that is all.
 * Two variants persist each step append-only: the step's new entries as JSON lines, in memory
 * (the serialisation floor), or inserted into SQLite on disk in WAL mode with one fsynced
 * commit per step (the durable floor), or inserted into Postgres, one autocommitted INSERT per
 * step (a named prepared statement, in a schema of its own).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ANSWER, type Contestant, GOAL, nextAction, timeLoads, toolResult } from '../workload.js';

type Entry = Record<string, unknown>;
/** Persists one step's new entries; returns the bytes written (a promise for an async store). */
type Persist = (runId: string, step: number, entries: Entry[]) => number | Promise<number>;

async function policy(history: readonly Entry[], steps: number) {
  return nextAction((history.length - 1) / 2, steps);
}

async function echo(args: { n: number }) {
  return toolResult(args.n);
}

/**
 * The loop. Returns the bytes `persist` reported, or null without one; the run's history is left
 * in `history` when one is given.
 */
async function loop(
  steps: number,
  runId: string,
  persist: Persist | null,
  history: Entry[] = [],
): Promise<number | null> {
  history.push({ role: 'user', content: GOAL });
  let bytes = 0;
  // A synchronous persist is not awaited: the in-memory and SQLite floors pay no extra microtask.
  let wrote: number | Promise<number> = persist ? persist(runId, 0, history) : 0;
  bytes += typeof wrote === 'number' ? wrote : await wrote;
  for (let step = 1; ; step++) {
    const action = await policy(history, steps);
    if ('final' in action) {
      const entry = { role: 'assistant', final: action.final };
      history.push(entry);
      if (persist) {
        wrote = persist(runId, step, [entry]);
        bytes += typeof wrote === 'number' ? wrote : await wrote;
      }
      if (action.final !== ANSWER || step !== steps + 1) throw new Error('floor: wrong run');
      return persist ? bytes : null;
    }
    const call = { role: 'assistant', tool: action.tool, args: action.args };
    const result = { role: 'tool', tool: action.tool, result: await echo(action.args) };
    history.push(call, result);
    if (persist) {
      wrote = persist(runId, step, [call, result]);
      bytes += typeof wrote === 'number' ? wrote : await wrote;
    }
  }
}

export function floor(): Contestant {
  return {
    name: 'floor',
    persists: 'nothing',
    run: async (steps, runId) => ({ bytes: await loop(steps, runId, null) }),
    // The checkpoint floor: the run's history as one JSON text and back, nothing checked, no
    // canonical form (no sorted keys), nothing restored.
    async checkpoint(steps, runId) {
      const history: Entry[] = [];
      await loop(steps, runId, null, history);
      const t = performance.now();
      const text = JSON.stringify(history);
      const saveMs = performance.now() - t;
      const loadMs = await timeLoads(
        () => JSON.parse(text) as Entry[],
        (again) => {
          if (again.length !== 2 * steps + 2) throw new Error('floor: checkpoint');
        },
      );
      return { saveMs, loadMs, bytes: text.length };
    },
  };
}

/** Append-only JSON lines in memory: what serialising each step's new data costs. */
export function floorAppendOnly(): Contestant {
  let log: string[] = [];
  const persist: Persist = (_runId, step, entries) => {
    const line = JSON.stringify({ step, entries });
    log.push(line);
    return line.length;
  };
  return {
    name: 'floor + append-only log',
    persists: 'each step as a JSON line, in memory',
    run: async (steps, runId) => {
      log = [];
      return { bytes: await loop(steps, runId, persist) };
    },
  };
}

/** One INSERT per step, each its own fsynced commit, SQLite on disk in WAL mode. */
export function floorSqlite(): Contestant {
  let dir = '';
  let db: Database.Database | null = null;
  let insert: Database.Statement | null = null;
  const persist: Persist = (runId, step, entries) => {
    const line = JSON.stringify(entries);
    insert?.run(runId, step, line);
    return line.length;
  };
  return {
    name: 'floor + SQLite append',
    persists: 'each step as one row, SQLite on disk (WAL, synchronous=FULL)',
    async setup() {
      dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-floor-'));
      db = new Database(join(dir, 'floor.db'));
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
      db.exec(
        'CREATE TABLE steps (run_id TEXT NOT NULL, step INTEGER NOT NULL, entries TEXT NOT NULL, PRIMARY KEY (run_id, step))',
      );
      insert = db.prepare('INSERT INTO steps (run_id, step, entries) VALUES (?, ?, ?)');
    },
    run: async (steps, runId) => ({ bytes: await loop(steps, runId, persist) }),
    async teardown() {
      db?.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One INSERT per step into Postgres, each its own (autocommitted) transaction. */
export function floorPostgres(url: string): Contestant {
  const schema = `tollgate_bench_floor_${process.pid}`;
  let client: import('pg').Client | null = null;
  // One connection: concurrent runs' INSERTs queue on it, one after another (as pg would).
  let last: Promise<unknown> = Promise.resolve();
  const persist: Persist = (runId, step, entries) => {
    const line = JSON.stringify(entries);
    const insert = () =>
      client?.query({
        name: 'floor_insert',
        text: `INSERT INTO ${schema}.steps (run_id, step, entries) VALUES ($1, $2, $3)`,
        values: [runId, step, line],
      });
    const done = last.then(insert);
    last = done.catch(() => {});
    return done.then(() => line.length);
  };
  return {
    name: 'floor + Postgres append',
    persists: `each step as one row, one autocommitted INSERT, Postgres (${url.replace(/\/\/[^@]*@/, '//')})`,
    async setup() {
      const pg = (await import('pg')).default;
      client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.query(`CREATE SCHEMA ${schema}`);
      await client.query(
        `CREATE TABLE ${schema}.steps (run_id TEXT NOT NULL, step INTEGER NOT NULL, entries TEXT NOT NULL, PRIMARY KEY (run_id, step))`,
      );
    },
    run: async (steps, runId) => ({ bytes: await loop(steps, runId, persist) }),
    async teardown() {
      await client?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client?.end();
    },
  };
}
