/**
 * Loads an agent module: a file whose default export (or `agent` export) is `defineAgent({...})`.
 * JavaScript is imported by Node. TypeScript (.ts, .mts, .cts) is imported through tsx's ESM
 * loader API, loaded only for such a module: tsx is an optional peer dependency, and a project
 * of JavaScript agents never needs it.
 */
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type AgentDefinition, isAgentDefinition } from '../define.js';
import { CliEnvironmentError, CliUsageError } from './exit-codes.js';
import { buildMissingMessage, missingOwnFile, missingPackage } from './self.js';

const TYPESCRIPT = new Set(['.ts', '.mts', '.cts']);

/** The install advice when a TypeScript module is given and tsx is not installed. */
export const TSX_ADVICE = 'npm install --save-dev tsx (or compile the module to JavaScript)';

type Importer = (url: string) => Promise<Record<string, unknown>>;

/** Imports through tsx, scoped to this one import (tsImport does not register tsx for the process). */
async function typescriptImporter(path: string): Promise<Importer> {
  let api: typeof import('tsx/esm/api');
  try {
    api = await import('tsx/esm/api');
  } catch (error) {
    const file = missingOwnFile(error);
    if (file) throw new CliEnvironmentError(buildMissingMessage(file));
    if (missingPackage(error) === 'tsx') {
      throw new CliEnvironmentError(`agent module ${path} is TypeScript, which needs tsx: ${TSX_ADVICE}`);
    }
    throw new CliEnvironmentError(`cannot load tsx for ${path}: ${(error as Error).message.split('\n')[0]}`);
  }
  // tsImport appeared in tsx 4.8 and loads CommonJS since 4.13: an older tsx is told apart.
  if (typeof api.tsImport !== 'function') {
    throw new CliEnvironmentError(`agent module ${path} is TypeScript, which needs tsx 4.13 or later: ${TSX_ADVICE}`);
  }
  return (url) => api.tsImport(url, import.meta.url);
}

/** Loads the agent definition a module exports. */
export async function loadAgentModule(path: string): Promise<AgentDefinition> {
  const absolute = resolve(path);
  const load: Importer = TYPESCRIPT.has(extname(absolute).toLowerCase())
    ? await typescriptImporter(path)
    : (url) => import(url);
  let mod: Record<string, unknown>;
  try {
    mod = await load(pathToFileURL(absolute).href);
  } catch (error) {
    const message = String((error as Error)?.message ?? error);
    if ((error as { code?: string })?.code === 'ERR_MODULE_NOT_FOUND' && message.includes(absolute)) {
      throw new CliUsageError(`agent module not found: ${absolute}`);
    }
    throw new CliUsageError(`agent module ${path} failed to load: ${message.split('\n')[0]}`);
  }
  // `.default.default`: a TypeScript module compiled as CommonJS, seen through ESM interop.
  const inner = mod.default as Record<string, unknown> | undefined;
  const candidate = [mod.default, mod.agent, inner?.default, inner?.agent].find(isAgentDefinition);
  if (!candidate) {
    throw new CliUsageError(`agent module ${path} does not export an agent: export default defineAgent({ ... })`);
  }
  return candidate;
}
