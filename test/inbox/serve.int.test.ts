/**
 * `tollgate serve` as a user runs it: the demo's run (`npm start`'s support-desk agent) pauses
 * for its refund; `tollgate serve` on that store shows it in Chromium; approving it there, with a
 * `tollgate worker` running, finishes the run — the refund made once, by the worker.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { build, workspace } from '../cli/workspace.js';
import { chromiumSkipReason, launchChromium } from '../support/chromium.js';

const skip = chromiumSkipReason();
const demoAgent = join(build.dir, 'dist', 'docs', 'examples', 'support-desk.js');
const GOAL = 'Customer ana@example.com: order A-1001 arrived broken, please refund it.';
const TOKEN = 'serve-test-token-0123456789';
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

/** Starts `tollgate …args` in `dir`; resolves with the process once its first line of output is out. */
function start(args: string[], dir: string, env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; first: string }> {
  const child = spawn(process.execPath, [build.bin, ...args], { cwd: dir, env });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr?.on('data', (chunk) => {
      err += chunk;
    });
    child.stdout?.on('data', (chunk) => {
      out += chunk;
      const line = out.split('\n')[0];
      if (out.includes('\n') && line !== undefined) resolve({ child, first: line });
    });
    child.once('exit', (code) => reject(new Error(`tollgate ${args[0]} exited with ${code}: ${err}`)));
  });
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });

/** One request to `url` over node:http, which sends the `Host` header as given (fetch would not). */
function send(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, url), { method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        text += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null }));
    });
    req.once('error', reject);
    req.end(body);
  });
}

describe('tollgate serve', () => {
  it('refuses conflicting or weak authentication with exit 2', async () => {
    const { cli } = workspace();
    expect((await cli(['serve', '--users-file', 'u.json', '--proxy-header', 'X-User'])).code).toBe(2);
    expect((await cli(['serve', '--port', 'http'])).code).toBe(2);
    // --create: a new store (a missing one is refused, serve-worker-store.int.test.ts), so the token is what is wrong.
    const weak = await cli(['serve', '--port', '0', '--create'], { TOLLGATE_INBOX_TOKEN: 'short' });
    expect(weak.code).toBe(2);
    expect(weak.stderr).toMatch(/at least 16 characters/);
    const bad = await cli(['serve', '--proxy-header', 'X-User', '--origin', 'approvals.example.com']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/expected an origin/);
  });

  it('behind a proxy, answers requests addressed to each --origin’s host and the --host it listens on, refuses others', async () => {
    const { dir, env } = workspace();
    const serve = await start(
      [
        'serve',
        '--proxy-header',
        'X-Forwarded-User',
        '--origin',
        'https://approvals.example.com',
        '--origin',
        'https://inbox.example.org:8443/',
        '--host',
        '127.0.0.2',
        '--port',
        '0',
        '--create',
        '--json',
      ],
      dir,
      env,
    );
    const { url, auth } = JSON.parse(serve.first) as { url: string; auth: string };
    expect(auth).toBe('proxy');
    expect(url).toMatch(/^http:\/\/127\.0\.0\.2:\d+$/); // on --host, not the default 127.0.0.1
    const session = (host: string) =>
      send(url, 'GET', '/api/session', { host, 'x-forwarded-user': 'dana', accept: 'application/json' });
    for (const host of ['approvals.example.com', 'inbox.example.org:8443', new URL(url).host]) {
      const answer = await session(host);
      expect(answer.status, host).toBe(200);
      expect(answer.body.user).toBe('dana');
    }
    for (const host of ['evil.example', 'approvals.example.com:8443', 'inbox.example.org']) {
      const refused = await session(host);
      expect(refused.status, host).toBe(403);
      expect(refused.body.error.code).toBe('forbidden');
    }
    // A page of the public origin may change things; one of another origin may not.
    const { csrf } = (await session('approvals.example.com')).body as { csrf: string };
    const body = JSON.stringify({ decisions: { x: { approve: true } } });
    const decide = (origin: string) =>
      send(
        url,
        'POST',
        '/api/runs/nope/decisions',
        {
          host: 'approvals.example.com',
          origin,
          'x-forwarded-user': 'dana',
          'x-tollgate-csrf': csrf,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
        },
        body,
      );
    expect((await decide('https://approvals.example.com')).status).toBe(404); // past the checks: no such run
    const crossOrigin = await decide('https://evil.example');
    expect(crossOrigin.status).toBe(403);
    expect(crossOrigin.body.error.message).toMatch(/cross-origin request from https:\/\/evil\.example refused/);
    serve.child.kill('SIGTERM');
    expect(await exited(serve.child)).toBe(0);
  }, 60_000);

  it.skipIf(skip !== null)(
    "shows the demo's pending refund; approving it in the browser, with a worker running, finishes the run",
    async () => {
      const { dir, env, cli, stored } = workspace();
      // No model keys: the demo's scripted policy. (`cli` adds these to its own environment.)
      const demoEnv: Record<string, string> = {
        TOLLGATE_DEMO_DIR: dir,
        TOLLGATE_DEMO_THINK_MS: '0',
        OPENAI_API_KEY: '',
        ANTHROPIC_API_KEY: '',
      };
      const run = await cli(
        ['run', demoAgent, GOAL, '--store', 'demo.db', '--run-id', 'demo-1', '--no-input'],
        demoEnv,
      );
      expect(run.code, run.stderr).toBe(3); // waits for approval

      const serveEnv = { ...env, ...demoEnv, TOLLGATE_INBOX_TOKEN: TOKEN };
      const serve = await start(['serve', demoAgent, '--store', 'demo.db', '--port', '0', '--json'], dir, serveEnv);
      const { url, auth } = JSON.parse(serve.first) as { url: string; auth: string };
      expect(auth).toBe('token');
      const worker = await start(['worker', demoAgent, '--store', 'demo.db', '--poll-ms', '100'], dir, {
        ...env,
        ...demoEnv,
      });

      const browser = await launchChromium();
      try {
        const page = await browser.context.newPage();
        await page.goto(`${url}/#token=${TOKEN}`);
        const card = page.locator('article[data-run="demo-1"]');
        await card.waitFor();
        expect(page.url()).toBe(`${url}/`); // the token left the address bar
        expect(await card.locator('.goal').textContent()).toContain(GOAL);
        expect(await card.locator('section.call h3 code').textContent()).toBe('refund');
        expect(JSON.parse((await card.locator('pre.args').textContent()) ?? '')).toEqual({
          order: 'A-1001',
          amount: 129,
        });
        expect(existsSync(join(dir, 'refunds.json'))).toBe(false);
        await card.locator('select.choice').selectOption('approve');
        await card.locator('input.note').fill('photo of the damage checked');
        await card.getByRole('button', { name: 'Record decisions' }).click();
        await card.waitFor({ state: 'detached', timeout: 20_000 });
      } finally {
        await browser.close();
      }
      expect((await stored('demo-1', 'demo.db'))?.status).toBe('done');
      const refunds = JSON.parse(readFileSync(join(dir, 'refunds.json'), 'utf8')) as { key: string; amount: number }[];
      expect(refunds.map((r) => [r.key, r.amount])).toEqual([['demo-1:2', 129]]);

      serve.child.kill('SIGTERM');
      worker.child.kill('SIGTERM');
      expect(await exited(serve.child)).toBe(0);
      expect(await exited(worker.child)).toBe(0);
    },
    90_000,
  );
});
