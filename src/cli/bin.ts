#!/usr/bin/env node
/**
 * The `tollgate` executable. main.js is imported here, not statically, so that a build being
 * rebuilt (`npm run build` deletes dist/ first) is reported in one line instead of a stack trace.
 */
import { dirname, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

// Inlined rather than imported from self.js: that file may be the one missing.
function missingBuildFile(error: unknown): string | null {
  if ((error as { code?: unknown } | null)?.code !== 'ERR_MODULE_NOT_FOUND') return null;
  const path = /Cannot find module '([^']+)'/.exec(String((error as Error).message))?.[1];
  const ours = dirname(dirname(dirname(fileURLToPath(import.meta.url)))) + sep;
  return path?.startsWith(ours) && !path.includes(`${sep}node_modules${sep}`) ? path : null;
}

let main: (argv: string[]) => Promise<number>;
try {
  ({ main } = await import('./main.js'));
} catch (error) {
  const file = missingBuildFile(error);
  if (!file) throw error;
  process.stderr.write(`tollgate: Tollgate's build is missing (${file}): run npm run build\n`);
  process.exit(1);
}
process.exitCode = await main(process.argv.slice(2));
