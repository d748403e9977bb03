/**
 * A streaming model's deltas and the CLI's output when nobody watches a terminal: piped, the
 * output keeps one line per history entry; `--json` prints the one JSON object and nothing else.
 * The live view at a terminal is in tmux.int.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { fixture, workspace } from './workspace.js';

describe('streamed deltas, off a terminal', () => {
  it('piped: no delta text, the history entries as ever', async () => {
    const { cli } = workspace();
    const run = await cli(['run', fixture('stream-agent.mjs'), 'look', '--run-id', 'p1']);
    expect(run.code).toBe(0);
    expect(run.stdout).not.toContain('model');
    expect(run.stdout).not.toContain('\u001b');
    expect(run.stdout).toContain('call      lookup {"id":"inv-7"}');
    expect(run.stdout).toContain('answer    looked up');
  });

  it('--json: exactly one JSON object on stdout', async () => {
    const { cli } = workspace();
    const run = await cli(['run', fixture('stream-agent.mjs'), 'look', '--run-id', 'j1', '--json']);
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({ runId: 'j1', status: 'done', answer: 'looked up' });
  });
});
