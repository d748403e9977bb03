/**
 * The test set StrykerJS runs per mutant (npm run test:mutation): the unit tests and the
 * model-based suites in their mutation mode (TOLLGATE_MUTATION=1: shortest paths, fewer
 * fast-check cases, no child processes, which would not load the mutant), and the Agent with the
 * in-memory store (test/store-agent.test.ts, test/stores/leases.test.ts: one process, no service),
 * and the unit test of the runtime's retry-after reading (test/models/retry-after.test.ts). Integration tests (real
 * process kills, the file/SQLite/Postgres stores, CLI, docs) are left out: they run code in
 * other processes or need services.
 */
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

export default defineConfig({
  ...base,
  test: {
    ...base.test,
    // One project: the base's two (unit, then the process suites) are not what a mutant runs.
    projects: undefined,
    // Replaces the base list (mergeConfig would append to it).
    include: [
      'test/*.test.ts',
      'test/hostile/*.test.ts',
      'test/models/retry-after.test.ts',
      'test/stores/leases.test.ts',
      'test/model/machine.test.ts',
      'test/model/batch-paths.test.ts',
      'test/model/paths.int.test.ts',
      'test/model/commands.int.test.ts',
    ],
    exclude: ['test/docs.test.ts', 'test/docs.int.test.ts', 'node_modules/**'],
    env: { TOLLGATE_MUTATION: '1' },
    reporters: ['default'],
  },
});
