/** SqliteStore on paths and files that cannot be a working database: typed errors naming the path. */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import {
  OptionsError,
  type RunWrite,
  StoreDamagedError,
  StoreUnavailableError,
  SystemError,
  TollgateError,
  UserError,
} from '../../src/index.js';
import { SqliteStore } from '../../src/stores/sqlite.js';

const root = mkdtempSync(join(tmpdir(), 'tollgate-sqlite-faults-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = () => join(root, `${++n}.db`);
const write = (from = 0, append: string[] = []): RunWrite => ({
  status: 'running',
  head: '{}',
  from,
  append,
  pendingCalls: [],
});

/** What `fn` throws (it must throw). */
function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a throw');
}

describe('SqliteStore.open on what cannot be a database', () => {
  it('a file that is not a database: StoreDamagedError naming it, and the file is left as it was', () => {
    const path = fresh();
    const text = 'name,amount\nrefund,500\n'.repeat(20);
    writeFileSync(path, text);
    const error = thrown(() => SqliteStore.open(path));
    expect(error).toBeInstanceOf(StoreDamagedError);
    expect(error).toBeInstanceOf(SystemError);
    expect(error.message).toBe(
      `SqliteStore.open: ${JSON.stringify(path)} is not a SQLite database (or its header is damaged); nothing was changed`,
    );
    expect(readFileSync(path, 'utf8')).toBe(text);
  });

  it('a database whose pages are damaged: StoreDamagedError naming it, at open or at the first read', async () => {
    const path = fresh();
    const store = SqliteStore.open(path);
    for (let i = 0; i < 20; i++) await store.save(`r${i}`, write(0, [JSON.stringify('x'.repeat(500))]), 0);
    await store.close();
    const bytes = readFileSync(path);
    // Keep the 100-byte header, scramble every page after it.
    for (let i = 100; i < bytes.length; i++) bytes[i] = (i * 7919) & 0xff;
    writeFileSync(path, bytes);
    rmSync(`${path}-wal`, { force: true });
    let error: unknown;
    try {
      const damaged = SqliteStore.open(path);
      await damaged.load('r1').finally(() => damaged.close());
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(StoreDamagedError);
    expect((error as Error).message).toMatch(
      new RegExp(
        `^SqliteStore\\.(open|load): ${JSON.stringify(path).replace(/[.\\/]/g, '\\$&')} (is damaged \\(.*\\); restore it from a backup|is not a SQLite database)`,
      ),
    );
  });

  it('a directory: OptionsError naming it', () => {
    const path = join(root, 'a-folder');
    mkdirSync(path);
    const error = thrown(() => SqliteStore.open(path));
    expect(error).toBeInstanceOf(OptionsError);
    expect(error.message).toBe(
      `SqliteStore.open: ${JSON.stringify(path)} is a directory; give the path of a database file in it`,
    );
  });

  it('a path whose folder is missing, or is a file: OptionsError naming the folder; nothing is created', () => {
    const missing = join(root, 'no-such-folder', 'runs.db');
    const error = thrown(() => SqliteStore.open(missing));
    expect(error).toBeInstanceOf(OptionsError);
    expect(error.message).toBe(
      `SqliteStore.open: cannot create ${JSON.stringify(missing)}: its folder ${join(root, 'no-such-folder')} does not exist; create it first`,
    );
    expect(existsSync(join(root, 'no-such-folder'))).toBe(false);
    const file = fresh();
    writeFileSync(file, '');
    const under = join(file, 'runs.db');
    expect(thrown(() => new SqliteStore({ path: under })).message).toBe(
      `new SqliteStore: cannot create ${JSON.stringify(under)}: ${file} is not a folder`,
    );
  });

  it('a new database another connection holds locked past busyTimeoutMs: StoreUnavailableError', () => {
    const path = fresh();
    const holder = new Database(path);
    holder.exec('BEGIN IMMEDIATE');
    try {
      const error = thrown(() => SqliteStore.open(path, { busyTimeoutMs: 30 }));
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(error.message).toBe(
        `SqliteStore.open: ${JSON.stringify(path)} is locked by another connection for over busyTimeoutMs (30 ms); try again later`,
      );
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
    // Once the lock is gone, the same file opens and migrates.
    expect(SqliteStore.open(path).settings.schemaVersion).toBeGreaterThan(0);
  });
});

describe('SqliteStore after close', () => {
  it('every call is a UserError naming the call and the file, not a driver TypeError', async () => {
    const path = fresh();
    const store = SqliteStore.open(path);
    await store.save('r', write(), 0);
    await store.close();
    for (const [call, run] of [
      ['load', () => store.load('r')],
      ['save', () => store.save('r', write(), 1)],
      ['list', () => store.list()],
      ['delete', () => store.delete('r')],
    ] as const) {
      const error = await run().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UserError);
      expect((error as Error).message).toBe(`SqliteStore.${call}: the store is closed (${JSON.stringify(path)})`);
    }
  });
});

it('every error SqliteStore throws is a TollgateError', () => {
  for (const path of [join(root, 'no', 'x.db'), root]) {
    expect(thrown(() => SqliteStore.open(path))).toBeInstanceOf(TollgateError);
  }
});
