/**
 * Interactive approval at a real terminal: the built CLI (and the `npm start` demo) run inside
 * tmux, which gives them a pseudo-terminal; keys are sent and the screen is read back.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildOnce } from './build.js';

const build = buildOnce();
const { bin } = build;
const demo = join(build.dir, 'dist', 'docs', 'examples', 'demo.js');
const hasTmux = spawnSync('tmux', ['-V']).status === 0;
const sessions: string[] = [];

/**
 * A tmux server of this file's own (its own socket), kept alive by a session that outlives the
 * tests: a server exits with its last session, and a new session asked for while it is exiting
 * fails with "server exited unexpectedly".
 */
const SOCKET = `tollgate-test-${process.pid}`;

function tmux(...args: string[]): string {
  return execFileSync('tmux', ['-L', SOCKET, ...args], { encoding: 'utf8' });
}

beforeAll(() => {
  if (hasTmux) tmux('new-session', '-d', '-s', 'keepalive', 'sleep 3600');
});

afterAll(() => {
  spawnSync('tmux', ['-L', SOCKET, 'kill-server']);
});

function startSession(command: string, cwd: string, env: Record<string, string>): string {
  const name = `tollgate-test-${process.pid}-${sessions.length}`;
  sessions.push(name);
  const exports = Object.entries(env)
    .map(([k, v]) => `${k}='${v}'`)
    .join(' ');
  tmux(
    'new-session',
    '-d',
    '-s',
    name,
    '-x',
    '150',
    '-y',
    '50',
    `cd '${cwd}' && env ${exports} ${command}; echo EXIT=$?; sleep 60`,
  );
  return name;
}

const screen = (name: string) => tmux('capture-pane', '-p', '-S', '-200', '-t', name);

async function waitFor(name: string, text: string | RegExp, timeoutMs = 30_000): Promise<string> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const s = screen(name);
    if (typeof text === 'string' ? s.includes(text) : text.test(s)) return s;
    if (Date.now() > end) throw new Error(`screen never showed ${text}:\n${s}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

afterEach(() => {
  for (const name of sessions.splice(0)) spawnSync('tmux', ['-L', SOCKET, 'kill-session', '-t', name]);
});

describe.skipIf(!hasTmux && !process.env.CI)('interactive approval in a terminal (tmux)', () => {
  const base = () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-tty-'));
    return { dir, env: { TOLLGATE_TEST_LEDGER: join(dir, 'ledger.txt'), TOLLGATE_USER: 'dana', NO_COLOR: '1' } };
  };
  const agent = build.fixture('pay-agent.mjs');

  it('shows the pending call, approves with a note at the prompt, and finishes', async () => {
    const { dir, env } = base();
    const s = startSession(`node ${bin} run ${agent} 'pay invoice 7' --run-id t1`, dir, env);
    const prompt = await waitFor(s, 'Run pay?');
    expect(prompt).toContain('key       t1:2');
    expect(prompt).toContain('expires   never');
    tmux('send-keys', '-t', s, 'Enter');
    await waitFor(s, 'note (as dana)');
    tmux('send-keys', '-t', s, '-l', 'invoice checked');
    tmux('send-keys', '-t', s, 'Enter');
    const end = await waitFor(s, /EXIT=\d+/);
    expect(end).toContain('(approved by dana)');
    expect(end).toContain('answer    paid');
    expect(end).toContain('EXIT=0');
    expect(readFileSync(join(dir, 'ledger.txt'), 'utf8')).toBe('t1:2 250\n');
  });

  it('denies at the prompt: nothing is paid and the model is told why', async () => {
    const { dir, env } = base();
    const s = startSession(`node ${bin} run ${agent} 'pay' --run-id t2`, dir, env);
    await waitFor(s, 'Run pay?');
    tmux('send-keys', '-t', s, 'Down');
    tmux('send-keys', '-t', s, 'Enter');
    await waitFor(s, 'why deny?');
    tmux('send-keys', '-t', s, '-l', 'duplicate invoice');
    tmux('send-keys', '-t', s, 'Enter');
    const end = await waitFor(s, /EXIT=\d+/);
    expect(end).toContain('denied by human: duplicate invoice');
    expect(end).toContain('EXIT=0');
    expect(existsSync(join(dir, 'ledger.txt'))).toBe(false);
  });

  it('an empty deny note is refused and asked again, as `tollgate deny` requires one', async () => {
    const { dir, env } = base();
    const s = startSession(`node ${bin} run ${agent} 'pay' --run-id t3`, dir, env);
    await waitFor(s, 'Run pay?');
    tmux('send-keys', '-t', s, 'Down');
    tmux('send-keys', '-t', s, 'Enter');
    await waitFor(s, 'why deny?');
    tmux('send-keys', '-t', s, 'Enter');
    await waitFor(s, 'a denial needs a reason');
    tmux('send-keys', '-t', s, '-l', 'wrong amount');
    tmux('send-keys', '-t', s, 'Enter');
    const end = await waitFor(s, /EXIT=\d+/);
    expect(end).toContain('denied by human: wrong amount');
    expect(end).toContain('EXIT=0');
    expect(existsSync(join(dir, 'ledger.txt'))).toBe(false);
  });

  it("a streaming model's text and call pieces appear as they arrive, escaped", async () => {
    const { dir, env } = base();
    const go = join(dir, 'go');
    const s = startSession(`node ${bin} run ${build.fixture('stream-agent.mjs')} 'look' --run-id t4`, dir, {
      ...env,
      TOLLGATE_TEST_GO: go,
    });
    // The policy call is still in flight (it waits for the go file): what shows was streamed.
    const live = await waitFor(s, 'model     calls lookup {"id":');
    expect(live).toContain('model     Checking the \\u001b[2Jinvoice');
    expect(live).not.toContain('call      lookup');
    writeFileSync(go, '');
    const end = await waitFor(s, /EXIT=\d+/);
    expect(end).toContain('model     calls lookup {"id":"inv-7"}\ncall      lookup {"id":"inv-7"}');
    expect(end).toContain('model     All done\nanswer    looked up');
    expect(end).toContain('goal      look'); // nothing cleared the screen
    expect(end).toContain('EXIT=0');
  });

  it('the npm start demo, killed at the prompt and started again, resumes where it was', async () => {
    const { dir, env } = base();
    // No API key: the demo stays on its scripted policy, offline, whatever the shell holds.
    const offline = { OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' };
    const demoEnv = { ...env, ...offline, TOLLGATE_DEMO_DIR: join(dir, '.tollgate'), TOLLGATE_DEMO_THINK_MS: '20' };
    const first = startSession(`node ${demo}`, dir, demoEnv);
    await waitFor(first, 'Run refund?');
    // Kill the whole terminal session: the process dies at the prompt.
    spawnSync('tmux', ['-L', SOCKET, 'kill-session', '-t', first]);
    const second = startSession(`node ${demo}`, dir, demoEnv);
    const resumed = await waitFor(second, 'Run refund?');
    expect(resumed).toContain('resuming unfinished demo-1');
    tmux('send-keys', '-t', second, 'Enter');
    await waitFor(second, 'note (as dana)');
    tmux('send-keys', '-t', second, 'Enter');
    const end = await waitFor(second, /EXIT=\d+/);
    expect(end).toContain('Refunded $129 for A-1001');
    expect(end).toContain('EXIT=0');
    const refunds = JSON.parse(readFileSync(join(dir, '.tollgate', 'refunds.json'), 'utf8'));
    expect(refunds).toEqual([expect.objectContaining({ key: 'demo-1:2', amount: 129 })]);
    // A third start: the demo run is finished, so a new one begins.
    const third = startSession(`node ${demo} --no-input`, dir, demoEnv);
    const next = await waitFor(third, /EXIT=\d+/);
    expect(next).toContain('run demo-2');
    expect(next).toContain('EXIT=3');
  });
});
