/**
 * Checkpoints resumed in a fresh Node process, as a restarted service would: the blob is all
 * that crosses. (Integration: each test starts a process.)
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { awaitingBlob } from './support/checkpoint-blobs.js';
import { midCall } from './support/mid-call.js';

const run = promisify(execFile);

describe('a checkpoint in a new process', () => {
  it('a valid blob resumes and loads in a new process', async () => {
    const blob = await awaitingBlob();
    const script = `import { Agent } from './src/index.ts'; const b = process.argv[1];
      const a = Agent.resume(b, { policy: () => ({ final: 1 }), tools: [] });
      process.stdout.write(JSON.stringify({ same: a.checkpoint() === b, status: a.status,
        pending: a.state.pendingCalls.map((p) => p.key) }));`;
    const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, blob]);
    expect(JSON.parse(stdout)).toEqual({ same: true, status: 'awaiting_approval', pending: ['r:2.2', 'r:2.3'] });
  });

  it('resumes in a new process exactly where the original stopped', async () => {
    const blob = await midCall({ sideEffect: true, idempotent: true });
    const file = join(mkdtempSync(join(tmpdir(), 'tollgate-')), 'run.json');
    writeFileSync(file, blob);
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'test/support/resume-child.ts', file], {
      cwd: process.cwd(),
    });
    const out = JSON.parse(stdout);
    expect(out.same).toBe(true);
    expect(out.status).toBe('done');
    expect(out.calls).toEqual([{ args: { amount: 7 }, key: 'r:1' }]);
    expect(out.state.history).toHaveLength(4);
  });
});
