/**
 * A store described as JSON, so a child process can open the same store as its parent.
 * One branch per store kind: add yours to the switch.
 */
import type { CheckpointStore } from '../../src/index.js';
import { FileStore } from '../../src/stores/file.js';
import { PostgresStore } from '../../src/stores/postgres.js';
import { SqliteStore } from '../../src/stores/sqlite.js';

export type StoreSpec =
  | { kind: 'file'; dir: string }
  | { kind: 'sqlite'; path: string }
  | { kind: 'postgres'; url: string; schema: string };

/** Opens the store `spec` describes; `now`, when given, is its clock (in this process only: a function is not JSON). */
export async function storeFromSpec(spec: StoreSpec, now?: () => number): Promise<CheckpointStore> {
  const clock = now ? { now } : {};
  switch (spec.kind) {
    case 'file':
      return new FileStore({ dir: spec.dir, ...clock });
    case 'sqlite':
      return SqliteStore.open(spec.path, clock);
    case 'postgres':
      return new PostgresStore(spec.url, { schema: spec.schema, ...clock });
    default:
      throw new Error(`storeFromSpec: unknown store kind ${JSON.stringify((spec as { kind?: unknown }).kind)}`);
  }
}
