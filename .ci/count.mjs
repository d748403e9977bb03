// The closing line of .ci/run, "N passed, N failed", from the vitest reports of the Node 20 run
// (reports/vitest.json) and of the Node 24 run (argv[4], when it exists). Arguments: the failed
// steps, the Node 20 run's exit code, the Node 24 report's path, the Node 24 run's exit code. A
// run that exited non-zero with no failed test in its report counts one failure.
import { existsSync, readFileSync } from 'node:fs';

const [steps, testStatus, node24Report, node24Status] = process.argv.slice(2);
let passed = 0;
let failed = 0;
for (const file of ['reports/vitest.json', node24Report]) {
  if (file === '' || (file !== 'reports/vitest.json' && !existsSync(file))) continue;
  try {
    const r = JSON.parse(readFileSync(file, 'utf8'));
    passed += r.numPassedTests;
    failed += r.numFailedTests;
    if (r.numTotalTests === 0) failed += 1;
  } catch {
    failed += 1;
  }
}
failed += Number(steps) + (Number(testStatus) !== 0 && failed === 0 ? 1 : 0);
failed += Number(node24Status) !== 0 && failed === 0 ? 1 : 0;
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
