import { defineConfig } from 'vitest/config';

/**
 * The suites that kill, pause and time real processes (test/crash, test/chaos) run after the rest,
 * one file at a time: on a 2-core machine, run beside the other files they starve the processes
 * they watch (a store lock held past its timeout by a worker that never got the CPU).
 */
const processes = ['test/crash/**/*.test.ts', 'test/chaos/**/*.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 20_000,
    // The JSON report is what .ci/run counts for its closing "N passed, N failed" line.
    reporters: ['default', 'json'],
    outputFile: { json: 'reports/vitest.json' },
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/**/*.test.ts'], exclude: processes, sequence: { groupOrder: 0 } },
      },
      {
        extends: true,
        test: { name: 'processes', include: processes, fileParallelism: false, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
