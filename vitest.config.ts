import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  resolve: {
    // Docs examples import the package by name, as a user would.
    alias: [
      { find: /^tollgate\/testing$/, replacement: here('./src/testing/index.ts') },
      { find: /^tollgate\/machine$/, replacement: here('./machines/agent.ts') },
      { find: /^tollgate\/(memory|file|sqlite|postgres)$/, replacement: `${here('./src/stores/')}$1.ts` },
      { find: /^tollgate$/, replacement: here('./src/index.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    // The JSON report is what .ci/run counts for its closing "N passed, N failed" line.
    reporters: ['default', 'json'],
    outputFile: { json: 'reports/vitest.json' },
  },
});
