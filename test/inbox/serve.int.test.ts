/**
 * `tollgate serve` as a user runs it: the demo's run (`npm start`'s support-desk agent) pauses
 * for its refund; `tollgate serve` on that store shows it in Chromium; approving it there, with a
 * `tollgate worker` running, finishes the run — the refund made once, by the worker.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { build, workspace } from '../cli/workspace.js';
import { chromiumSkipReason, launchChromium } from '../support/chromium.js';

const skip = chromiumSkipReason();
const demoAgent = join(build.dir, 'dist', 'examples', 'support-desk.js');
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

describe('tollgate serve', () => {
  it('refuses conflicting or weak authentication with exit 2', async () => {
    const { cli } = workspace();
    expect((await cli(['serve', '--users-file', 'u.json', '--proxy-header', 'X-User'])).code).toBe(2);
    expect((await cli(['serve', '--port', 'http'])).code).toBe(2);
    const weak = await cli(['serve', '--port', '0'], { TOLLGATE_INBOX_TOKEN: 'short' });
    expect(weak.code).toBe(2);
    expect(weak.stderr).toMatch(/at least 16 characters/);
  });

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
