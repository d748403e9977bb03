// A writer process for the conformance suite's cross-process race (src/testing/conformance/writer.ts):
// it opens the store its parent describes on stdin and races saves against another such process.
import { serveWriter } from '../../src/testing/index.js';
import { storeFromSpec } from './store-spec.js';

await serveWriter(storeFromSpec);
