/** The one conformance suite (tollgate/testing), unchanged, against every store in test/support/stores.ts. */
import { afterAll, describe, it } from 'vitest';
import { checkpointStoreConformance, conformanceCases } from '../../src/testing/index.js';
import { storesUnderTest } from '../support/stores.js';

for (const entry of storesUnderTest) {
  const reason = (await entry.unavailable?.()) ?? null;
  if (reason) {
    describe(`CheckpointStore conformance: ${entry.name}`, () => {
      for (const testCase of conformanceCases) it.skip(`${testCase.name} [skipped — ${reason}]`, () => {});
    });
    continue;
  }
  checkpointStoreConformance(entry.name, entry.context(), { describe, it });
  afterAll(() => entry.cleanup());
}
