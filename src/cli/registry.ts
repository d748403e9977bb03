/**
 * Remembers which agent module each run belongs to, so that `tollgate approve <runId>` can
 * continue a run without being told its agent again: `.tollgate/agents.json` in the directory
 * the command runs in, `{ "version": 2, "stores": { <store key>: { <runId>: <absolute module path> } } }`.
 *
 * Keyed by the store's identity (store-location.ts), never by how `--store` was spelt, and never
 * holding a password. Version 1 files (flat `"<--store value>#<runId>"` keys, which could hold a
 * Postgres password) are read and rewritten in version 2 at the next write.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { CliUsageError } from './exit-codes.js';
import { locateStore, type StoreLocation } from './store-location.js';

type Stores = Record<string, Record<string, string>>;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** Reads a version 1 file's flat keys into stores, by each key's store identity. */
function fromVersion1(data: Record<string, unknown>, dir: string): Stores {
  const stores: Stores = Object.create(null);
  for (const [flat, module] of Object.entries(data)) {
    const at = flat.lastIndexOf('#');
    if (at <= 0 || typeof module !== 'string') continue;
    try {
      const { key } = locateStore(flat.slice(0, at), dir);
      stores[key] ??= Object.create(null);
      (stores[key] as Record<string, string>)[flat.slice(at + 1)] = module;
    } catch {
      // Not a store we can name any more: the entry is dropped.
    }
  }
  return stores;
}

/** The run → agent module registry of one directory. */
export class AgentRegistry {
  readonly #dir: string;
  readonly #file: string;

  constructor(dir = process.cwd()) {
    this.#dir = dir;
    this.#file = join(dir, '.tollgate', 'agents.json');
  }

  #read(): Stores {
    let data: unknown;
    try {
      data = JSON.parse(readFileSync(this.#file, 'utf8'));
    } catch {
      return Object.create(null);
    }
    if (!isRecord(data)) return Object.create(null);
    if (data.version === 2 && isRecord(data.stores)) return data.stores as Stores;
    return fromVersion1(data, this.#dir);
  }

  /** The module recorded for a run of a store, if any. */
  get(location: StoreLocation, runId: string): string | undefined {
    const runs = this.#read()[location.key];
    return runs && Object.hasOwn(runs, runId) ? runs[runId] : undefined;
  }

  /** Records a run's module. Call it only once the run exists in the store. */
  set(location: StoreLocation, runId: string, modulePath: string): void {
    const stores = this.#read();
    stores[location.key] = { ...stores[location.key], [runId]: resolve(modulePath) };
    mkdirSync(dirname(this.#file), { recursive: true });
    // Write then rename: a reader never sees half a file.
    const temp = `${this.#file}.${process.pid}.tmp`;
    writeFileSync(temp, `${JSON.stringify({ version: 2, stores }, null, 2)}\n`);
    renameSync(temp, this.#file);
  }
}

/** The module to continue a run with: `--agent`, else the one recorded for the run. */
export function agentPathFor(
  registry: AgentRegistry,
  location: StoreLocation,
  runId: string,
  option: string | undefined,
): string {
  const path = option ?? registry.get(location, runId);
  if (!path) {
    throw new CliUsageError(
      `no agent module known for run ${runId} of store ${location.display}: pass --agent <module>`,
    );
  }
  return path;
}
