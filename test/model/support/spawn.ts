/** Runs a batch job in a fresh Node process (child.ts) and returns its results. */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const CHILD = fileURLToPath(new URL('./child.ts', import.meta.url));

export async function inFreshProcess<T>(job: object): Promise<{ pid: number; results: T[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-model-'));
  try {
    const input = join(dir, 'job.json');
    const output = join(dir, 'out.json');
    writeFileSync(input, JSON.stringify(job));
    await promisify(execFile)(process.execPath, ['--import', 'tsx', CHILD, input, output], {
      maxBuffer: 64 * 1024 * 1024,
    });
    return JSON.parse(readFileSync(output, 'utf8'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
