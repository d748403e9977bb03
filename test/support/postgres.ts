/**
 * Finding the Postgres server the tests use, and giving each test file a schema of its own.
 *
 * The URL comes from TOLLGATE_PG_URL (`.ci/run` sets it). Without it, or with a server that
 * does not answer, Postgres tests are skipped, and the reason is printed and written to
 * `reports/postgres-skipped.txt` so a CI script can refuse a run that skipped them. With
 * `CI` set, there is no skipping: the missing server is an error.
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdirSync } from 'node:fs';
import pg from 'pg';

export interface PostgresTarget {
  /** The server's URL, or null when the tests must be skipped. */
  url: string | null;
  /** Why they are skipped. */
  skipReason: string | null;
}

let probed: Promise<PostgresTarget> | null = null;

/** Probes the server once per process (3 s at most). */
export function postgresTarget(): Promise<PostgresTarget> {
  probed ??= probe();
  return probed;
}

async function probe(): Promise<PostgresTarget> {
  const url = process.env.TOLLGATE_PG_URL;
  if (!url) return skip('TOLLGATE_PG_URL is not set (e.g. postgres://postgres@127.0.0.1:5432/test)');
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return { url, skipReason: null };
  } catch (error) {
    return skip(`the server at TOLLGATE_PG_URL=${redact(url)} does not answer: ${describe(error)}`);
  } finally {
    await client.end().catch(() => {});
  }
}

function skip(reason: string): PostgresTarget {
  const message = `Postgres tests skipped: ${reason}`;
  if (process.env.CI) throw new Error(`${message}. CI is set, so Postgres tests must run.`);
  console.warn(`\n⚠ ${message}\n`);
  mkdirSync('reports', { recursive: true });
  appendFileSync('reports/postgres-skipped.txt', `${new Date().toISOString()} ${message}\n`);
  return { url: null, skipReason: reason };
}

/** A fresh schema name, unique per call: `tollgate_test_<label>_<random>`. */
export function freshSchema(label: string): string {
  return `tollgate_test_${label.replace(/[^a-z0-9]/gi, '_').toLowerCase()}_${randomBytes(5).toString('hex')}`;
}

/**
 * A fresh schema as an older Tollgate left it: only the first `steps` migrations applied, and a
 * client connected to the server to write its rows as that code did. The schema is added to
 * `cleanup` (the file's list for `dropSchema`) before anything is made in it; the caller ends the
 * client. Throws if the migrations did not stop at version `steps`.
 */
export async function oldSchema(
  url: string,
  label: string,
  steps: number,
  cleanup: string[],
): Promise<{ schema: string; s: string; client: pg.Client }> {
  const { MIGRATIONS, migrate } = await import('../../src/stores/postgres/migrations.js');
  const schema = freshSchema(label);
  cleanup.push(schema);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const version = await migrate(client, schema, MIGRATIONS.slice(0, steps));
    if (version !== steps) throw new Error(`oldSchema: migrated to version ${version}, not ${steps}`);
  } catch (error) {
    await client.end();
    throw error;
  }
  return { schema, s: `"${schema}"`, client };
}

/** Drops a schema and all it holds (the file's `afterAll`). */
export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    u.password = '';
    return u.toString();
  } catch {
    return '(unparseable URL)';
  }
}

function describe(error: unknown): string {
  const e = error as { code?: string; message?: string };
  return [e.code, e.message].filter(Boolean).join(' ') || String(error);
}
