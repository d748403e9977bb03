/**
 * The stores the conformance suite runs against (test/stores/conformance.int.test.ts).
 * Each entry makes a ConformanceContext; a store that needs a server says when it is not there.
 * To add a store: append an entry to `storesUnderTest` (and a branch to store-spec.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CheckpointStore } from '../../src/index.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { type ConformanceContext, spawnNodeWriter } from '../../src/testing/index.js';
import { dropSchema, freshSchema, postgresTarget } from './postgres.js';
import { type StoreSpec, storeFromSpec } from './store-spec.js';

export interface StoreUnderTest {
  name: string;
  /** Why this store cannot be tested on this machine (e.g. no server), or null. */
  unavailable?(): Promise<string | null>;
  /** The context; called once, after `unavailable` said the store is there. */
  context(): ConformanceContext;
  /** Removes what the context made (temp directories, schemas). */
  cleanup(): Promise<void>;
}

const WRITER = join(import.meta.dirname, 'store-writer.ts');

/** A context for a store kind that can be described as JSON: reopen and cross-process come free. */
export function specContext(next: () => StoreSpec): ConformanceContext {
  const specs = new WeakMap<CheckpointStore, StoreSpec>();
  const open = async (spec: StoreSpec, now?: () => number) => {
    const store = await storeFromSpec(spec, now);
    specs.set(store, spec);
    return store;
  };
  const specOf = (store: CheckpointStore) => {
    const spec = specs.get(store);
    if (!spec) throw new Error('this store was not made by this context');
    return spec;
  };
  return {
    create: () => open(next()),
    createWithClock: (now) => open(next(), now),
    reopen: (store) => open(specOf(store)),
    spawnWriter: (store, job) => spawnNodeWriter({ script: WRITER, spec: specOf(store), job }),
  };
}

/** A temp directory per store kind, removed by cleanup. */
function tempRoot(kind: string) {
  let root: string | null = null;
  let n = 0;
  return {
    next: () => {
      root ??= mkdtempSync(join(tmpdir(), `tollgate-${kind}-`));
      return join(root, String(++n));
    },
    cleanup: async () => {
      if (root) rmSync(root, { recursive: true, force: true });
      root = null;
    },
  };
}

const fileDirs = tempRoot('file');
const sqliteDirs = tempRoot('sqlite');
/** Each Postgres store the suite creates gets a schema of its own, dropped by cleanup. */
const pgSchemas: string[] = [];

export const storesUnderTest: StoreUnderTest[] = [
  {
    name: 'memory',
    context: () => ({
      create: async () => new MemoryStore(),
      createWithClock: async (now) => new MemoryStore({ now }),
      groupBudgets: true,
      summary: true,
      bases: true,
      renewMany: true,
      open: true,
      skip: {
        crossProcess: 'a MemoryStore lives inside one process',
        reopen: 'a MemoryStore keeps nothing once closed',
      },
    }),
    cleanup: async () => {},
  },
  {
    name: 'file',
    context: () => ({
      ...specContext(() => ({ kind: 'file', dir: fileDirs.next() })),
      summary: true,
      renewMany: true,
      open: true,
      skip: {
        groupBudgets: 'the file store keeps no group budgets',
        bases: 'the file store writes its head file whole every save: a base would save nothing',
      },
    }),
    cleanup: fileDirs.cleanup,
  },
  {
    name: 'sqlite',
    context: () => ({
      ...specContext(() => ({ kind: 'sqlite', path: `${sqliteDirs.next()}.db` })),
      groupBudgets: true,
      summary: true,
      bases: true,
      renewMany: true,
      open: true,
    }),
    cleanup: sqliteDirs.cleanup,
  },
  {
    name: 'postgres',
    unavailable: async () => (await postgresTarget()).skipReason,
    context: () => ({
      ...specContext(() => {
        const schema = freshSchema('conformance');
        pgSchemas.push(schema);
        return { kind: 'postgres', url: process.env.TOLLGATE_PG_URL ?? '', schema };
      }),
      groupBudgets: true,
      summary: true,
      bases: true,
      renewMany: true,
      open: true,
    }),
    cleanup: async () => {
      const url = (await postgresTarget()).url;
      if (url) for (const schema of pgSchemas.splice(0)) await dropSchema(url, schema);
    },
  },
];
