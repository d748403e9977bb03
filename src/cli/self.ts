/**
 * Tollgate's own package, seen from the CLI: its version, and whether a failed import means
 * that a file of Tollgate's build is missing (someone ran `npm run build`, which deletes `dist/`
 * first) or that a package is not installed. The two need different advice.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CliEnvironmentError } from './exit-codes.js';

const here = dirname(fileURLToPath(import.meta.url));

/** The nearest directory above this file with Tollgate's package.json. */
function packageRoot(): string | null {
  for (let dir = here; ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      try {
        if (JSON.parse(readFileSync(file, 'utf8')).name === 'tollgate') return dir;
      } catch {
        // Not ours (or unreadable): keep looking up.
      }
    }
    if (dirname(dir) === dir) return null;
  }
}

/** Tollgate's version, from its package.json. */
export function version(): string {
  const root = packageRoot();
  if (!root) return 'unknown';
  return String(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version);
}

const isModuleNotFound = (error: unknown) =>
  (error as { code?: unknown } | null)?.code === 'ERR_MODULE_NOT_FOUND' && error instanceof Error;

/**
 * The file of Tollgate's own build that `error` says is missing, or null. Node reports a missing
 * file as "Cannot find module '/…/dist/src/stores/sqlite.js' imported from …".
 */
export function missingOwnFile(error: unknown): string | null {
  if (!isModuleNotFound(error)) return null;
  const path = /Cannot find module '([^']+)'/.exec((error as Error).message)?.[1];
  // Ours: below the directory that holds this build (dist/ when built), not a dependency's.
  const ours = dirname(dirname(here)) + sep;
  return path?.startsWith(ours) && !path.includes(`${sep}node_modules${sep}`) ? path : null;
}

/** The package that `error` says is not installed ("Cannot find package 'better-sqlite3'"), or null. */
export function missingPackage(error: unknown): string | null {
  if (!isModuleNotFound(error)) return null;
  return /Cannot find package '([^']+)'/.exec((error as Error).message)?.[1] ?? null;
}

/** The one line to say when Tollgate's build is missing a file. */
export function buildMissingMessage(file: string): string {
  return `Tollgate's build is missing (${file}): run npm run build`;
}

/** What an optional part of Tollgate needs: its packages, who needs them, and the command that installs them. */
export interface Needs {
  packages: readonly string[];
  /** Said first: "this store", "tollgate serve". */
  who: string;
  install: string;
}

/**
 * Imports a module of Tollgate's that needs optional packages (a store driver, the inbox's web
 * server), telling a missing package — said with the command that installs it — from a missing
 * file of the build.
 * @throws CliEnvironmentError when either is missing.
 */
export async function importNeeding<T>(load: () => Promise<T>, needs: Needs): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const file = missingOwnFile(error);
    if (file) throw new CliEnvironmentError(buildMissingMessage(file));
    const missing = missingPackage(error);
    if (missing !== null && needs.packages.includes(missing)) {
      throw new CliEnvironmentError(`${needs.who} needs ${missing}, which is not installed: ${needs.install}`);
    }
    throw new CliEnvironmentError(
      `cannot load ${needs.packages.join(', ')}: ${(error as Error).message.split('\n')[0]}`,
    );
  }
}
