/**
 * Store options are strict and checked up front, before any file or connection is opened: an
 * unknown key names the key meant, a bad value names the call, the option and the value, and a
 * duration is bounded by what a Node timer keeps (2^31−1 ms).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { StoreUnavailableError as FromErrors } from '../../src/errors.js';
import { OptionsError } from '../../src/index.js';
import { compareCodePoints, MAX_TIMER_MS } from '../../src/store-kit.js';
import { FileStore } from '../../src/stores/file.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { PostgresStore, redactUrl, StoreUnavailableError } from '../../src/stores/postgres.js';
import { SqliteStore } from '../../src/stores/sqlite.js';

const root = mkdtempSync(join(tmpdir(), 'tollgate-options-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const dir = join(root, 'files');
const db = join(root, 'never-created.db');
const url = 'postgres://app:s3cret@127.0.0.1:5432/runs';

/** Runs `make` and returns the OptionsError's message (fails if it throws anything else, or nothing). */
function optionsError(make: () => unknown): string {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(OptionsError);
    return (error as Error).message;
  }
  throw new Error('expected an OptionsError');
}

describe('unknown option keys are refused, with the key meant', () => {
  it.each([
    [
      'new MemoryStore',
      () => new MemoryStore({ noww: Date.now } as never),
      'unknown option "noww" (did you mean "now"?)',
    ],
    [
      'new FileStore',
      () => new FileStore({ dir, lockTimeotMs: 5 } as never),
      'unknown option "lockTimeotMs" (did you mean "lockTimeoutMs"?)',
    ],
    [
      'SqliteStore.open',
      () => SqliteStore.open(db, { synchronus: 'NORMAL' } as never),
      'unknown option "synchronus" (did you mean "synchronous"?)',
    ],
    [
      'new SqliteStore',
      () => new SqliteStore({ path: db, busyTimeout: 5 } as never),
      'unknown option "busyTimeout" (did you mean "busyTimeoutMs"?)',
    ],
    [
      'new PostgresStore',
      () => new PostgresStore(url, { statementTimeout: 5 } as never),
      'unknown option "statementTimeout" (did you mean "statementTimeoutMs"?)',
    ],
    [
      'new PostgresStore',
      () => new PostgresStore(url, { shema: 'x' } as never),
      'unknown option "shema" (did you mean "schema"?)',
    ],
  ])('%s', (call, make, says) => {
    expect(optionsError(make)).toBe(`${call}: ${says}`);
  });

  it('an options value that is not an object is refused too', () => {
    expect(optionsError(() => new MemoryStore('fast' as never))).toBe(
      'new MemoryStore: options must be an object, got "fast"',
    );
    expect(optionsError(() => SqliteStore.open(db, 5 as never))).toBe(
      'SqliteStore.open: options must be an object, got 5',
    );
  });
});

describe('bad values name the call, the option and the value', () => {
  const over = 2 ** 31;
  const cases: [() => unknown, string][] = [
    [
      () => new FileStore({ dir, lockTimeoutMs: -1 }),
      'new FileStore: lockTimeoutMs must be a whole number of milliseconds from 0 to 2147483647, got -1',
    ],
    [
      () => new FileStore({ dir, lockTimeoutMs: 3e9 }),
      'new FileStore: lockTimeoutMs must be a whole number of milliseconds from 0 to 2147483647, got 3000000000',
    ],
    [
      () => new FileStore({ dir, lockTimeoutMs: 1.5 }),
      'new FileStore: lockTimeoutMs must be a whole number of milliseconds from 0 to 2147483647, got 1.5',
    ],
    [() => new FileStore({ dir: '' }), 'new FileStore: dir must be a directory path, got ""'],
    [
      () => new FileStore({ dir, onDamaged: 'warn' as never }),
      'new FileStore: onDamaged must be a function, got "warn"',
    ],
    [() => new FileStore(undefined as never), 'new FileStore: dir must be a directory path, got undefined'],
    [
      () => new MemoryStore({ now: 5 as never }),
      'new MemoryStore: now must be a function returning milliseconds since the epoch, got 5',
    ],
    [
      () => SqliteStore.open(db, { busyTimeoutMs: over }),
      `SqliteStore.open: busyTimeoutMs must be a whole number of milliseconds from 0 to 2147483647, got ${over}`,
    ],
    [
      () => SqliteStore.open(db, { synchronous: 'OFF' as never }),
      'SqliteStore.open: synchronous must be "FULL" or "NORMAL", got "OFF"',
    ],
    [() => SqliteStore.open(42 as never), 'SqliteStore.open: path must be a file path or ":memory:", got 42'],
    [
      () => new PostgresStore(url, { connectTimeoutMs: 0 }),
      'new PostgresStore: connectTimeoutMs must be a whole number of milliseconds from 1 to 2147483647, got 0',
    ],
    [
      () => new PostgresStore(url, { statementTimeoutMs: Number.NaN }),
      'new PostgresStore: statementTimeoutMs must be a whole number of milliseconds from 1 to 2147483647, got NaN',
    ],
    [
      () => new PostgresStore(url, { queryTimeoutMs: Number.POSITIVE_INFINITY }),
      'new PostgresStore: queryTimeoutMs must be a whole number of milliseconds from 1 to 2147483647, got Infinity',
    ],
    [
      () => new PostgresStore(url, { queryTimeoutMs: '5000' as never }),
      'new PostgresStore: queryTimeoutMs must be a whole number of milliseconds from 1 to 2147483647, got "5000"',
    ],
    [
      () => new PostgresStore(url, { maxConnections: 0 }),
      'new PostgresStore: maxConnections must be a whole number ≥ 1, got 0',
    ],
    [
      () => new PostgresStore(url, { schema: 'x"; DROP TABLE y; --' }),
      'new PostgresStore: schema must be an identifier (letters, digits, _; at most 63), got "x\\"; DROP TABLE y; --"',
    ],
    [
      () => new PostgresStore(url, { now: 'db' as never }),
      'new PostgresStore: now must be a function returning milliseconds since the epoch, got "db"',
    ],
    [
      () => new PostgresStore(42 as never),
      'new PostgresStore: give a connection string, a pg PoolConfig or a pg.Pool, got 42',
    ],
  ];
  for (const [make, says] of cases) {
    it(says, () => {
      expect(optionsError(make)).toBe(says);
    });
  }

  it('the longest timer Node keeps is accepted; nothing was opened for the refused ones', async () => {
    expect(MAX_TIMER_MS).toBe(2_147_483_647);
    const store = new FileStore({ dir, lockTimeoutMs: MAX_TIMER_MS });
    expect(store.dir).toBe(dir);
    await store.close();
    await new PostgresStore(url, { statementTimeoutMs: MAX_TIMER_MS - 1 }).close();
    // SqliteStore.open refused its options before creating the file.
    await expect(import('node:fs').then((fs) => fs.existsSync(db))).resolves.toBe(false);
  });
});

describe('Postgres connection strings are checked up front, and never shown with a password', () => {
  it.each([
    ['postgres://app:s3cret@db:notaport/runs', 'is not a valid URL (Invalid URL): check the host and port'],
    ['postgres://app:s3cret@[::1/runs', 'is not a valid URL (Invalid URL)'],
    ['postgres://app:p#ss@db/runs', 'holds "#", where a URL ends: pg would ignore the rest; percent-encode it (%23)'],
    ['db.example.com', 'is not a Postgres URL (postgres://user:password@host:5432/database)'],
    ['mysql://app:s3cret@db/runs', 'is not a Postgres URL'],
  ])('%s', (text, says) => {
    const message = optionsError(() => new PostgresStore(text));
    expect(message).toMatch(/^new PostgresStore: "/);
    expect(message).toContain(says);
    expect(message).not.toMatch(/s3cret|p#ss/);
  });

  it('a PoolConfig with a connection string is checked the same way; an empty one is refused', () => {
    expect(optionsError(() => new PostgresStore({ connectionString: 'postgres://u:pw@h:x/d' }))).toMatch(
      /^new PostgresStore: "postgres:\/\/u:\*\*\*@h:x\/d" is not a valid URL/,
    );
    expect(optionsError(() => new PostgresStore(''))).toBe(
      'new PostgresStore: the connection string must be a postgres:// URL, got ""',
    );
  });

  it('redactUrl hides the password in well-formed and malformed URLs alike', () => {
    expect(redactUrl('postgres://app:s3cret@db:5432/runs')).toBe('postgres://app:***@db:5432/runs');
    expect(redactUrl('postgres://app@db/runs')).toBe('postgres://app@db/runs');
    expect(redactUrl('postgres://db/runs')).toBe('postgres://db/runs');
    // An unencoded @ or # in the password: everything up to the last @ is user info.
    expect(redactUrl('postgres://app:p@ss#w@rd@db/runs')).toBe('postgres://app:***@db/runs');
    expect(redactUrl('postgres://db/runs?sslmode=require&password=s3cret&x=1')).toBe(
      'postgres://db/runs?sslmode=require&password=***&x=1',
    );
    expect(redactUrl('postgres://app:s3cret@db:notaport/runs')).toBe('postgres://app:***@db:notaport/runs');
  });
});

describe('one list order for every store', () => {
  it('compareCodePoints is code-point order, not UTF-16 code units, not a locale', () => {
    const ids = ['😀', 'ｚ', 'é', 'z', 'b', 'a', 'Z', 'B', 'ab', 'a', '\uffff', '\ud7ff', '𐀀'];
    const byUtf8 = [...ids].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    expect([...ids].sort(compareCodePoints)).toEqual(byUtf8);
    expect(['ｚ', '😀'].sort(compareCodePoints)).toEqual(['ｚ', '😀']);
    expect(['ｚ', '😀'].sort()).toEqual(['😀', 'ｚ']); // what JavaScript's default order would give
    expect(['a', 'B'].sort(compareCodePoints)).toEqual(['B', 'a']);
    expect(['a', 'B'].sort((x, y) => x.localeCompare(y))).toEqual(['a', 'B']); // what the file store gave
    expect(compareCodePoints('a', 'a')).toBe(0);
  });
});

it('StoreUnavailableError is one class, exported by tollgate and by tollgate/postgres', () => {
  expect(StoreUnavailableError).toBe(FromErrors);
});
