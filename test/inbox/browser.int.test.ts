/**
 * The inbox end to end in real Chromium (Debian's, driven by playwright-core): runs paused for
 * approval in an SQLite file, an approver who signs in, approves one, edits and approves
 * another, denies a third with a note; a worker applies the decisions (the tool ledger says what
 * ran) and the page updates live. Also: an expired call cannot be approved, model and tool text
 * holding HTML renders as text, and nothing works without the token. The screenshots in
 * docs/inbox.md are taken here.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInboxServer, type InboxServer } from '../../src/inbox/index.js';
import { SqliteStore } from '../../src/stores/sqlite.js';
import { ManualClock } from '../../src/testing/index.js';
import { recordDecision, Worker } from '../../src/worker/index.js';
import { chromiumSkipReason, launchChromium } from '../support/chromium.js';
import { deskAgent, type Ledger, pausedRun, TOKENS } from './fixture.js';

const skip = chromiumSkipReason();
const IMAGES = join(import.meta.dirname, '..', '..', 'docs', 'images');
const XSS_GOAL =
  'refund A-400 300 <script>window.__xss=1;alert(1)</script> "><img src=x onerror="window.__xss=2;alert(2)">';

/** Polls `check` until it holds (10 s at most). */
async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

// A browser on a loaded CI machine is slow: each step has a minute.
describe.skipIf(skip !== null)(`the inbox in Chromium${skip ? ` (${skip})` : ''}`, { timeout: 60_000 }, () => {
  let dir: string;
  let store: SqliteStore;
  let inbox: InboxServer;
  let url: string;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;
  const ledger: Ledger = [];
  const desk = deskAgent(ledger, { approvalTtlMs: 3_600_000 });
  const clock = new ManualClock(0);
  const dialogs: string[] = [];
  const card = (runId: string) => page.locator(`article[data-run="${runId}"]`);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-inbox-e2e-'));
    store = SqliteStore.open(join(dir, 'runs.db'));
    await pausedRun(store, deskAgent(ledger, { approvalTtlMs: 1 }), 'gone', 'refund A-500 100');
    await pausedRun(store, deskAgent(ledger, { approvalTtlMs: 300_000 }), 'late', 'refund A-600 100');
    await pausedRun(store, desk, 'deny-me', 'refund A-300 100');
    await pausedRun(store, desk, 'edit-me', 'refund A-200 9900');
    await pausedRun(store, desk, 'approve-me', 'refund+email A-100 4200');
    await pausedRun(store, desk, 'xss', XSS_GOAL);
    // A run whose stored state cannot be read: the page names it and shows the others.
    await store.save(
      'broken',
      { status: 'awaiting_approval', head: 'garbage', from: 0, append: [], pendingCalls: [] },
      0,
    );
    clock.advance(Date.now() + 10);
    inbox = createInboxServer({ store, auth: { users: TOKENS }, agents: [desk], clock, pollMs: 100 });
    url = await inbox.listen({ port: 0 });
    browser = await launchChromium();
    page = await browser.context.newPage();
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    mkdirSync(IMAGES, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await inbox?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses every request without the token, and shows the sign-in form', async () => {
    await page.goto(url);
    await page.locator('#login').waitFor();
    const statuses = await page.evaluate(async () => {
      const paths = ['/api/session', '/api/runs', '/api/runs/xss', '/api/events'];
      const got = await Promise.all(paths.map((p) => fetch(p).then((r) => r.status)));
      const post = await fetch('/api/runs/xss/decisions', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ decisions: { x: { approve: true } } }),
      });
      return [...got, post.status];
    });
    expect(statuses).toEqual([401, 401, 401, 401, 401]);
    await page.fill('#token', 'not-the-token-0123456789');
    await page.click('#login-form button');
    await page.locator('#login-error', { hasText: 'Sign-in refused' }).waitFor();
    // Nobody is signed in: the bar that names the user and offers Sign out is not shown.
    expect(await page.locator('#who').isVisible()).toBe(false);
  });

  it('signs in with the token and lists the runs awaiting approval, newest first', async () => {
    await page.fill('#token', TOKENS.dana);
    await page.click('#login-form button');
    await page.locator('#user', { hasText: 'dana' }).waitFor();
    await card('gone').waitFor();
    const order = await page
      .locator('article.run')
      .evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-run')));
    expect(order).toEqual(['xss', 'approve-me', 'edit-me', 'deny-me', 'late', 'gone']);
    expect(await page.locator('#summary').textContent()).toBe(
      '6 runs awaiting approval, newest first. 1 run could not be read (broken): see the server log.',
    );
    expect(await card('approve-me').locator('section.call').count()).toBe(2); // a refund and an email
    expect(await card('approve-me').locator('.countdown').first().textContent()).toMatch(/expires in (59|60)m/);
    await page.locator('#live', { hasText: 'live' }).waitFor();
    await page.screenshot({ path: join(IMAGES, 'inbox.png'), fullPage: true });
  });

  it('filters by tool and by how long a run has waited', async () => {
    const shown = () => page.locator('article.run').count();
    await page.fill('#filter-tool', 'email');
    await until('the tool filter', async () => (await shown()) === 1);
    expect(await card('approve-me').count()).toBe(1);
    await page.fill('#filter-tool', '');
    await page.selectOption('#filter-age', 'min:3600');
    await until('the age filter', async () => (await shown()) === 0);
    expect(await page.locator('#summary').textContent()).toMatch(
      /^No runs awaiting approval\. 1 run could not be read/,
    );
    await page.selectOption('#filter-age', '');
    await until('no filter', async () => (await shown()) === 6);
  });

  it('renders HTML in goals and tool arguments as text', async () => {
    const xss = card('xss');
    expect(await xss.locator('.goal').textContent()).toContain('<script>window.__xss=1;alert(1)</script>');
    expect(await xss.locator('pre.args').textContent()).toContain(
      '"><img src=x onerror=\\"window.__xss=2;alert(2)\\">',
    );
    await xss.locator('summary').click();
    await xss.locator('.history li').first().waitFor();
    expect(await xss.locator('.history').textContent()).toContain('<script>');
    expect(await page.locator('img, article script').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(dialogs).toEqual([]);
  });

  it('shows an expired call as expired and offers no approval for it', async () => {
    const gone = card('gone');
    expect(await gone.locator('.countdown').textContent()).toBe('expired');
    expect(await gone.locator('select.choice option[value="approve"]').isDisabled()).toBe(true);
  });

  it('approves one run (its two calls together), edits and approves another, denies a third with a note', async () => {
    const approve = card('approve-me');
    const choices = approve.locator('select.choice');
    await choices.nth(0).selectOption('approve');
    await choices.nth(1).selectOption('approve');
    await approve.getByRole('button', { name: 'Record decisions' }).click();
    await approve.locator('.recorded', { hasText: 'Decision recorded by dana' }).waitFor();
    // The card says what was decided, call by call.
    expect(await approve.locator('.recorded').textContent()).toMatch(
      /: \w+ approved; \w+ approved\. A worker will apply it\.$/,
    );

    const edit = card('edit-me');
    await edit.locator('select.choice').selectOption('edit');
    const editor = edit.locator('textarea.args-editor');
    await editor.fill('{"order": "A-200", "cents": ');
    await edit.locator('.verdict', { hasText: 'not JSON' }).waitFor();
    await editor.fill('{"order": "A-200", "cents": -5}');
    await edit.locator('.verdict', { hasText: 'cents' }).waitFor();
    await edit.getByRole('button', { name: 'Record decisions' }).click();
    await edit.locator('.message', { hasText: 'Fix the edited arguments' }).waitFor();
    await editor.fill('{"order": "A-200", "cents": 5000}');
    await edit.locator('.verdict', { hasText: 'valid for the tool' }).waitFor();
    await page.screenshot({ path: join(IMAGES, 'inbox-edit.png'), fullPage: true });
    await edit.getByRole('button', { name: 'Record decisions' }).click();
    await edit.locator('.recorded').waitFor();
    expect(await edit.locator('.recorded').textContent()).toContain(
      'approved with its arguments edited to {"order":"A-200","cents":5000}',
    );

    const deny = card('deny-me');
    await deny.locator('select.choice').selectOption('deny');
    await deny.getByRole('button', { name: 'Record decisions' }).click();
    await deny.locator('.message', { hasText: 'A denial needs a note' }).waitFor();
    await deny.locator('input.note').fill('order A-300 was never paid');
    await deny.getByRole('button', { name: 'Record decisions' }).click();
    await deny.locator('.recorded').waitFor();
    expect(await deny.locator('.recorded').textContent()).toContain('denied (“order A-300 was never paid”)');

    expect((await store.load('approve-me'))?.decision?.by).toBe('dana');
    expect((await store.load('edit-me'))?.decision?.decisions).toMatchObject({
      [(await store.load('edit-me'))!.pendingCalls[0]!.id]: { approve: true, args: { order: 'A-200', cents: 5000 } },
    });
    expect(ledger).toEqual([]); // recorded, not run: the server runs nothing
  });

  it('says clearly that a call which expired meanwhile cannot be approved, and records nothing', async () => {
    clock.advance(600_000); // past the 5-minute approval of `late`, on the server's clock
    const late = card('late');
    await late.locator('select.choice').selectOption('approve');
    await late.getByRole('button', { name: 'Record decisions' }).click();
    await late.locator('.message', { hasText: 'This approval has expired: nothing was recorded' }).waitFor();
    expect((await store.load('late'))?.decision).toBeNull();
  });

  it('a worker applies the decisions; the page updates live, without a reload', async () => {
    await recordDecision(store, 'xss', false, { by: 'terminal', note: 'decided elsewhere' });
    await card('xss').locator('.recorded', { hasText: 'by terminal' }).waitFor();
    const worker = new Worker({ store, agents: [desk], pollMs: 50 });
    await worker.start();
    try {
      // `gone` too: its approval expired, and the worker ends it as such.
      for (const runId of ['approve-me', 'edit-me', 'deny-me', 'xss', 'gone']) {
        await card(runId).waitFor({ state: 'detached' });
      }
    } finally {
      await worker.stop();
    }
    expect(ledger.sort()).toEqual([
      'approve-me:1.1 refund {"order":"A-100","cents":4200,"memo":"refund+email A-100 4200"}',
      'approve-me:1.2 email {"to":"ana@example.com","subject":"About A-100"}',
      'edit-me:1 refund {"order":"A-200","cents":5000}',
    ]);
    for (const runId of ['approve-me', 'edit-me', 'deny-me', 'xss']) {
      expect((await store.load(runId))?.status, runId).toBe('done');
    }
    await until(
      'the summary',
      async () => (await page.locator('#summary').textContent())?.startsWith('1 run awaiting') ?? false,
    );
    await page.screenshot({ path: join(IMAGES, 'inbox-after.png'), fullPage: true });
  });

  it('browses the finished runs, with their readable history', async () => {
    await page.getByRole('button', { name: 'Done' }).click();
    await card('deny-me').waitFor();
    const deny = card('deny-me');
    expect(await deny.locator('.outcome').textContent()).toContain('finished');
    await deny.locator('summary').click();
    await deny.locator('.history .h-approval').waitFor();
    expect(await deny.locator('.history').textContent()).toContain('denied by dana — “order A-300 was never paid”');
    // An edit is part of the record: the arguments the approver set, beside the model's call.
    const edit = card('edit-me');
    await edit.locator('summary').click();
    await edit.locator('.history .h-approval').waitFor();
    expect(await edit.locator('.history .h-approval').textContent()).toContain(
      'approved by dana, its arguments edited to {"cents":5000,"order":"A-200"}',
    );
    await page.screenshot({ path: join(IMAGES, 'inbox-done.png'), fullPage: true });
    expect(dialogs).toEqual([]);
  });

  it('signs out: the sign-in form again, and no "signed in as" left on the page', async () => {
    expect(await page.locator('#who').isVisible()).toBe(true);
    await page.click('#logout');
    await page.locator('#login').waitFor();
    expect(await page.locator('#who').isVisible()).toBe(false);
    expect(await page.locator('#inbox').isVisible()).toBe(false);
    expect(await page.evaluate(() => fetch('/api/runs').then((r) => r.status))).toBe(401);
  });
});
