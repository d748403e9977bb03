/**
 * What every command needs: the store (an SQLite file by default, or a Postgres URL), agent
 * modules, and the registry that remembers which module each run was started with, so that
 * `tollgate approve <runId>` can continue a run without being told its agent again.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type AgentDefinition, isAgentDefinition } from '../define.js';
import type { CheckpointStore } from '../store.js';
import { CliUsageError } from './exit-codes.js';

/** The store used when none is given: an SQLite file in the current directory. */
export const DEFAULT_STORE = 'tollgate.db';

export function storeSpec(option: string | undefined): string {
  return option ?? process.env.TOLLGATE_STORE ?? DEFAULT_STORE;
}

const isPostgres = (spec: string) => /^postgres(ql)?:\/\//i.test(spec);

/** Opens the store a `--store` value names: a postgres:// URL, or an SQLite file path. */
export async function openStore(spec: string): Promise<CheckpointStore> {
  if (isPostgres(spec)) {
    const { PostgresStore } = await import('../stores/postgres.js');
    const store = new PostgresStore(spec, { connectTimeoutMs: 3000 });
    try {
      await store.migrate();
    } catch (error) {
      await store.close().catch(() => {});
      throw error;
    }
    return store;
  }
  let sqlite: typeof import('../stores/sqlite.js');
  try {
    sqlite = await import('../stores/sqlite.js');
  } catch (error) {
    throw new CliUsageError(
      `the SQLite store needs better-sqlite3 12 (npm install better-sqlite3@12): ${String(error)}`,
    );
  }
  const path = resolve(spec);
  mkdirSync(dirname(path), { recursive: true });
  return sqlite.SqliteStore.open(path);
}

/** Loads an agent module: its default export (or `agent` export) must be `defineAgent({...})`. */
export async function loadAgentModule(path: string): Promise<AgentDefinition> {
  const absolute = isAbsolute(path) ? path : resolve(path);
  let mod: Record<string, unknown>;
  try {
    mod = await import(pathToFileURL(absolute).href);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' && String((error as Error).message).includes(absolute)) {
      throw new CliUsageError(`agent module not found: ${path}`);
    }
    throw new CliUsageError(`agent module ${path} failed to load: ${(error as Error).message}`);
  }
  const candidate = mod.default ?? mod.agent;
  if (!isAgentDefinition(candidate)) {
    throw new CliUsageError(`agent module ${path} does not export an agent: export default defineAgent({ ... })`);
  }
  return candidate;
}

/** Remembers which agent module each run belongs to, per store, in .tollgate/agents.json. */
export class AgentRegistry {
  readonly #file: string;

  constructor(dir = process.cwd()) {
    this.#file = join(dir, '.tollgate', 'agents.json');
  }

  #read(): Record<string, string> {
    try {
      const data = JSON.parse(readFileSync(this.#file, 'utf8'));
      return data && typeof data === 'object' ? data : {};
    } catch {
      return {};
    }
  }

  get(store: string, runId: string): string | undefined {
    return this.#read()[`${store}#${runId}`];
  }

  set(store: string, runId: string, modulePath: string): void {
    const data = { ...this.#read(), [`${store}#${runId}`]: resolve(modulePath) };
    mkdirSync(dirname(this.#file), { recursive: true });
    const temp = `${this.#file}.${process.pid}.tmp`;
    writeFileSync(temp, `${JSON.stringify(data, null, 2)}\n`);
    renameSync(temp, this.#file);
  }
}

/** The module to continue a run with: `--agent`, else the one the run was started with. */
export function agentPathFor(registry: AgentRegistry, store: string, runId: string, option?: string): string {
  const path = option ?? registry.get(store, runId);
  if (!path) {
    throw new CliUsageError(`no agent module known for run ${runId}: pass --agent <module>`);
  }
  return path;
}
