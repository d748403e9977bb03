/**
 * `tollgate serve` and `tollgate worker` as child processes of the built command: a `--store` that
 * does not exist is refused (a mistyped path must not become a new, empty store, an empty inbox)
 * unless `--create` is given; a bad `--users-file` is explained without any of its content.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { build, fixture, workspace } from './workspace.js';

const running = new Set<ReturnType<typeof spawn>>();

afterEach(() => {
  for (const child of running) if (child.exitCode === null) child.kill('SIGKILL');
  running.clear();
});

interface Started {
  /** The first line of stdout, or null when the process ended (or `ms` passed) before one. */
  first: string | null;
  /** The exit code, once it has ended (null while it runs, or when a signal ended it). */
  code: () => number | null;
  stdout: () => string;
  stderr: () => string;
  /** Sends SIGTERM and resolves with the exit code. */
  stop: () => Promise<number | null>;
  /** Resolves with the exit code; a process still running after `ms` is killed (null). */
  ended: (ms: number) => Promise<number | null>;
}

/** Starts `tollgate …args` in `dir`; resolves once it printed a line, ended, or `ms` passed. */
function start(args: string[], dir: string, env: NodeJS.ProcessEnv, ms = 15_000): Promise<Started> {
  const child = spawn(process.execPath, [build.bin, ...args], { cwd: dir, env });
  running.add(child);
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk) => {
    out += chunk;
  });
  child.stderr.on('data', (chunk) => {
    err += chunk;
  });
  const exit = new Promise<number | null>((done) => child.once('close', (code) => done(code)));
  const ended = async (wait: number) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), wait);
    try {
      return await exit;
    } finally {
      clearTimeout(timer);
    }
  };
  const started: Omit<Started, 'first'> = {
    code: () => child.exitCode,
    stdout: () => out,
    stderr: () => err,
    stop: () => {
      child.kill('SIGTERM');
      return ended(15_000);
    },
    ended,
  };
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ ...started, first: null }), ms);
    const line = () => {
      if (!out.includes('\n')) return;
      clearTimeout(timer);
      resolve({ ...started, first: out.split('\n')[0] as string });
    };
    child.stdout.on('data', line);
    void exit.then(() => {
      clearTimeout(timer);
      resolve({ ...started, first: out.includes('\n') ? (out.split('\n')[0] as string) : null });
    });
  });
}

describe('serve and worker: a --store that does not exist', () => {
  it('serve refuses it with exit 2, naming the path and --create, and creates nothing', async () => {
    const { dir, env } = workspace();
    const before = readdirSync(dir).sort();
    for (const store of ['typo.db', join('no', 'such', 'folder', 'runs.db')]) {
      const serve = await start(['serve', '--store', store, '--port', '0'], dir, {
        ...env,
        TOLLGATE_INBOX_TOKEN: 'x'.repeat(24),
      });
      expect(await serve.ended(15_000), serve.stdout()).toBe(2);
      expect(serve.stdout()).toBe('');
      expect(serve.stderr()).toContain(`store ${join(dir, store)} does not exist`);
      expect(serve.stderr()).toContain('pass --create to create a new store');
      expect(serve.stderr().trim().split('\n')).toHaveLength(1);
    }
    expect(existsSync(join(dir, 'typo.db'))).toBe(false);
    expect(existsSync(join(dir, 'no'))).toBe(false);
    expect(readdirSync(dir).sort()).toEqual(before);
  });

  it('serve refuses the default store (./tollgate.db) too when it does not exist; --json reports it as JSON', async () => {
    const { dir, env } = workspace();
    const serve = await start(['serve', '--port', '0', '--json'], dir, {
      ...env,
      TOLLGATE_INBOX_TOKEN: 'x'.repeat(24),
    });
    expect(await serve.ended(15_000)).toBe(2);
    const { error } = JSON.parse(serve.stderr()) as { error: { message: string; exitCode: number } };
    expect(error.exitCode).toBe(2);
    expect(error.message).toContain(`store ${join(dir, 'tollgate.db')} does not exist`);
    expect(error.message).toContain('--create');
    expect(existsSync(join(dir, 'tollgate.db'))).toBe(false);
  });

  it('worker refuses it with exit 2, naming the path and --create, and creates nothing', async () => {
    const { dir, env } = workspace();
    const before = readdirSync(dir).sort();
    for (const store of ['typo.db', join('no', 'such', 'folder', 'runs.db')]) {
      const worker = await start(['worker', fixture('pay-agent.mjs'), '--store', store, '--poll-ms', '50'], dir, env);
      expect(await worker.ended(15_000), worker.stdout()).toBe(2);
      expect(worker.stdout()).toBe('');
      expect(worker.stderr()).toContain(`store ${join(dir, store)} does not exist`);
      expect(worker.stderr()).toContain('pass --create to create a new store');
    }
    // The default store, as well.
    const worker = await start(['worker', fixture('pay-agent.mjs'), '--poll-ms', '50'], dir, env);
    expect(await worker.ended(15_000)).toBe(2);
    expect(worker.stderr()).toContain(`store ${join(dir, 'tollgate.db')} does not exist`);
    expect(readdirSync(dir).sort()).toEqual(before);
  });

  it('serve --create creates the store (and its folder), and serves it until SIGTERM', async () => {
    const { dir, env } = workspace();
    const path = join(dir, 'new', 'inbox.db');
    const serve = await start(['serve', '--store', join('new', 'inbox.db'), '--create', '--port', '0', '--json'], dir, {
      ...env,
      TOLLGATE_INBOX_TOKEN: 'x'.repeat(24),
    });
    expect(serve.first, serve.stderr()).not.toBeNull();
    const { url, store } = JSON.parse(serve.first as string) as { url: string; store: string };
    expect(store).toBe(path);
    expect(existsSync(path)).toBe(true);
    const session = await fetch(`${url}/api/session`, {
      headers: { authorization: `Bearer ${'x'.repeat(24)}`, accept: 'application/json' },
    });
    expect(session.status).toBe(200);
    expect(await serve.stop()).toBe(0);
  });

  it('worker --create creates the store; once it exists, serve and worker open it without --create', async () => {
    const { dir, env, stored } = workspace();
    const worker = await start(['worker', fixture('pay-agent.mjs'), '--create', '--poll-ms', '50'], dir, env);
    expect(worker.first, worker.stderr()).toMatch(/^worker .* · agents payer · .*· store .*tollgate\.db$/);
    expect(existsSync(join(dir, 'tollgate.db'))).toBe(true);
    expect(await worker.stop()).toBe(0);

    // The store exists now: a run submitted to it is worked by a worker started without --create.
    const submit = await start(['submit', fixture('pay-agent.mjs'), 'pay inv-7', '--run-id', 'w1'], dir, env);
    expect(await submit.ended(15_000), submit.stderr()).toBe(0);
    const again = await start(['worker', fixture('pay-agent.mjs'), '--poll-ms', '50'], dir, env);
    expect(again.first, again.stderr()).not.toBeNull();
    for (let i = 0; i < 300 && (await stored('w1'))?.status !== 'awaiting_approval'; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect((await stored('w1'))?.status).toBe('awaiting_approval');
    expect(await again.stop()).toBe(0);
    const serve = await start(['serve', '--port', '0', '--json'], dir, {
      ...env,
      TOLLGATE_INBOX_TOKEN: 'x'.repeat(24),
    });
    expect(serve.first, serve.stderr()).toMatch(/"auth":"token"/);
    expect(await serve.stop()).toBe(0);
  });
});

const TOKEN = 'sEcReT-TOKEN-12345';
/** Every piece of the token of 4 characters or more. */
const PIECES = [...Array(TOKEN.length - 3).keys()].map((i) => TOKEN.slice(i, i + 4));

/** Runs `serve --users-file users.json` on `content`; resolves with what it printed, after checking it ended with exit 2. */
async function refusedUsersFile(content: string, json = false): Promise<string> {
  const { dir, env } = workspace();
  writeFileSync(join(dir, 'users.json'), content);
  // No store: the users file is checked first (and --create is left out, so that these cases stand
  // on their own).
  const serve = await start(
    ['serve', '--users-file', 'users.json', '--port', '0', ...(json ? ['--json'] : [])],
    dir,
    env,
  );
  const code = await serve.ended(15_000);
  const printed = serve.stdout() + serve.stderr();
  expect(code, printed).toBe(2);
  expect(serve.stderr()).toContain('--users-file users.json: ');
  return printed;
}

/** True when `printed` holds no piece of the token (4 characters or more, case as written). */
function leaksNothing(printed: string): void {
  for (const piece of PIECES) expect(printed, `"${piece}" of the token was printed`).not.toContain(piece);
}

describe('serve --users-file: errors that never show the file', () => {
  it('malformed JSON: says so, and where when JSON.parse tells, and shows no part of a token', async () => {
    const cases: [string, RegExp][] = [
      [`{"dana": ${TOKEN}}`, /not valid JSON/],
      [`{\n  "dana": "${TOKEN}",\n}\n`, /not valid JSON \(at line 3, column 1\)/],
      [`{"dana": "${TOKEN}"`, /not valid JSON/],
      [`{'dana': '${TOKEN}'}`, /not valid JSON/],
      [`{\n  "dana": "${TOKEN}"\n  "lee": "${TOKEN}-2"\n}`, /not valid JSON/],
      [`{"dana": "${TOKEN}\t"}`, /not valid JSON/],
      [`{"dana": "${TOKEN}"} ${TOKEN}`, /not valid JSON/],
      [TOKEN, /not valid JSON/],
    ];
    for (const [content, message] of cases) {
      const printed = await refusedUsersFile(content);
      leaksNothing(printed);
      expect(printed).toMatch(message);
    }
    const printed = await refusedUsersFile(`{"dana": ${TOKEN}}`, true);
    expect(JSON.parse(printed).error.message).toMatch(/not valid JSON/);
    leaksNothing(printed);
  }, 120_000);

  it('the wrong shape: says what is wrong and which approver, and shows no part of a token', async () => {
    const cases: [string, RegExp][] = [
      [`["${TOKEN}"]`, /must map each approver’s name to their token.*; this file holds an array/],
      [`"${TOKEN}"`, /this file holds a string/],
      ['null', /this file holds null/],
      ['{}', /lists no approvers/],
      [`{"dana": ["${TOKEN}"]}`, /the token of "dana" is an array, not a string/],
      [`{"dana": {"token": "${TOKEN}"}}`, /the token of "dana" is an object, not a string/],
      [`{"users": {"dana": "${TOKEN}"}}`, /the token of "users" is an object, not a string/],
      // Written the wrong way round: the name looks like a token, so it is not shown.
      [`{"${TOKEN}": "dana"}`, /the token of approver 1 of 1 is shorter than 16 characters/],
      [`{"dana": "${TOKEN}", "${TOKEN}-2": 7}`, /the token of approver 2 of 2 is a number/],
      [`{"dana": "${TOKEN.slice(0, 10)}"}`, /the token of "dana" is shorter than 16 characters/],
      [`{"dana": "${TOKEN} 2"}`, /the token of "dana" holds a space or a line break/],
      [`{"dana": "${TOKEN}", "lee": "${TOKEN}"}`, /"dana" and "lee" have the same token/],
      [`{"": "${TOKEN}"}`, /approver 1 of 1: the name is empty/],
      [`{"dana": "${TOKEN}", "l\\u0000e": "${TOKEN}-2"}`, /approver 2 of 2: the name holds a control character/],
      [`{"${'n'.repeat(300)}": "${TOKEN}"}`, /approver 1 of 1: the name is longer than 256 characters/],
    ];
    for (const [content, message] of cases) {
      const printed = await refusedUsersFile(content);
      leaksNothing(printed);
      expect(printed).toMatch(message);
    }
  }, 120_000);

  it('a file with a byte order mark and good tokens is accepted', async () => {
    const { dir, env } = workspace();
    writeFileSync(join(dir, 'users.json'), `\uFEFF{"dana": "${TOKEN}", "lee": "${TOKEN}-2"}`);
    const serve = await start(['serve', '--users-file', 'users.json', '--create', '--port', '0', '--json'], dir, env);
    expect(serve.first, serve.stderr()).toMatch(/"auth":"users"/);
    leaksNothing(serve.stdout() + serve.stderr());
    expect(await serve.stop()).toBe(0);
  });
});
