/**
 * The command that starts a test's child process. Hundreds of children are started, so start-up
 * time is most of the crash test's time: `node --import tsx` takes ~0.65 s to start on this 2-core
 * machine, a plain-JS bundle of the worker ~0.33 s (measured). The bundle is built once per
 * test run with esbuild (which tsx and vite already bring); the drivers stay external, and the
 * bundle lives under node_modules so that it resolves them. Without esbuild: tsx.
 */
import { mkdirSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url));
const CACHE = fileURLToPath(new URL('../../node_modules/.cache/tollgate-crash/', import.meta.url));

/** The crash test's worker (test/crash/worker.ts). */
export function bundleWorker(): Promise<readonly string[]> {
  return bundleChild(WORKER);
}

/**
 * The command that runs the TypeScript file `entry` (an absolute path) as a child process: a
 * bundle named after the file and its folder (`chaos-worker.mjs`), so that two suites' children
 * never share one.
 */
export async function bundleChild(entry: string): Promise<readonly string[]> {
  const out = `${CACHE}${basename(dirname(entry))}-${basename(entry, '.ts')}.mjs`;
  try {
    const { build } = await import('esbuild');
    mkdirSync(CACHE, { recursive: true });
    await build({
      entryPoints: [entry],
      outfile: out,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      external: ['pg', 'better-sqlite3'],
      logLevel: 'warning',
    });
    return [process.execPath, out];
  } catch (error) {
    console.warn(`no bundle of ${entry} (${String(error)}); starting it with tsx, more slowly`);
    return [process.execPath, '--import', 'tsx', entry];
  }
}
