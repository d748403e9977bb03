#!/usr/bin/env node
/**
 * The `tollgate` executable. main.js is imported here, not statically, so that a build being
 * rebuilt (`npm run build` deletes dist/ first), or a package the command needs and the library
 * does not, is reported in one line instead of a stack trace.
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

/**
 * The command's own packages: optional peers of `tollgate`, so that a library user installs none
 * of them (package.json `peerDependencies`, with the same ranges).
 */
const CLI_PACKAGES: Record<string, string> = {
  commander: '14',
  '@inquirer/prompts': '7',
  picocolors: '1',
  'yocto-spinner': '1',
};

/** The CLI package that `error` says is not installed, or null. */
function missingCliPackage(error: unknown): string | null {
  if ((error as { code?: unknown } | null)?.code !== 'ERR_MODULE_NOT_FOUND') return null;
  const name = /Cannot find package '([^']+)'/.exec(String((error as Error).message))?.[1];
  return name !== undefined && name in CLI_PACKAGES ? name : null;
}

let main: (argv: string[]) => Promise<number>;
try {
  ({ main } = await import('./main.js'));
} catch (error) {
  const file = missingBuildFile(error);
  const pkg = file ? null : missingCliPackage(error);
  if (file) process.stderr.write(`tollgate: Tollgate's build is missing (${file}): run npm run build\n`);
  else if (pkg) {
    const all = Object.entries(CLI_PACKAGES).map(([name, major]) => `${name}@${major}`);
    process.stderr.write(
      `tollgate: the tollgate command needs ${pkg}, which is not installed (the library does not): npm install ${all.join(' ')}\n`,
    );
  } else throw error;
  process.exit(1);
}
process.exitCode = await main(process.argv.slice(2));
