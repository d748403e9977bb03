/**
 * The command that starts a crash-test worker. Hundreds of children are started, so start-up
 * time is most of the test's time: `node --import tsx` takes ~0.65 s to start on this 2-core
 * machine, a plain-JS bundle of the worker ~0.33 s (measured). The bundle is built once per
 * test run with esbuild (which tsx and vite already bring); the drivers stay external, and the
 * bundle lives under node_modules so that it resolves them. Without esbuild: tsx.
 */
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url));
const OUT = fileURLToPath(new URL('../../node_modules/.cache/tollgate-crash/worker.mjs', import.meta.url));

export async function bundleWorker(): Promise<readonly string[]> {
  try {
    const { build } = await import('esbuild');
    mkdirSync(fileURLToPath(new URL('.', `file://${OUT}`)), { recursive: true });
    await build({
      entryPoints: [WORKER],
      outfile: OUT,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      external: ['pg', 'better-sqlite3'],
      logLevel: 'warning',
    });
    return [process.execPath, OUT];
  } catch (error) {
    console.warn(`crash test: no worker bundle (${String(error)}); starting workers with tsx, more slowly`);
    return [process.execPath, '--import', 'tsx', WORKER];
  }
}
