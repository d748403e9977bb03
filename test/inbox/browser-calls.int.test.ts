/**
 * The inbox in real Chromium, call by call: what the page says when a call was decided by someone
 * else before the approver pressed the button, a call whose outcome is unknown after a crash, the
 * live expiry countdown with the call's key and requested time, and HTML in a denial note and in
 * a tool result, which must show as text.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createInboxServer, type InboxServer } from '../../src/inbox/index.js';
import { Agent, agentOptionsOf, defineAgent, type Policy, type Tool } from '../../src/index.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { ManualClock } from '../../src/testing/index.js';
import { Worker } from '../../src/worker/index.js';
import { chromiumSkipReason, launchChromium } from '../support/chromium.js';
import { crashedRun, deskAgent, type Ledger, pausedRun, TOKENS } from './fixture.js';
import { call } from './support.js';

const skip = chromiumSkipReason();
const HTML = '<script>window.__xss=1;alert(1)</script>"><img src=x onerror="window.__xss=2;alert(2)">';

/**
 * The `lookup` agent: it looks the order up (no approval: the result, HTML, is in the history at
 * once), then asks to refund it, then answers.
 */
function lookupAgent(ledger: Ledger) {
  const lookup: Tool = {
    name: 'lookup',
    input: z.object({ order: z.string() }),
    sideEffect: false,
    fn: () => `customer note: ${HTML}`,
  };
  const refund: Tool = {
    name: 'refund',
    input: z.object({ order: z.string(), cents: z.number() }),
    sideEffect: true,
    fn: (args, key) => {
      ledger.push(`${key} refund ${JSON.stringify(args)}`);
      return { refunded: args.cents };
    },
  };
  const policy: Policy = (history) => {
    const results = history.filter((e) => e.role === 'tool').length;
    if (results === 0) return { tool: 'lookup', args: { order: 'A-900' } };
    if (results === 1) return { tool: 'refund', args: { order: 'A-900', cents: 100 } };
    return { final: 'finished' };
  };
  return defineAgent({ name: 'lookup', policy, tools: [lookup, refund], maxSteps: 5 });
}

// A browser on a loaded CI machine is slow: each step has a minute.
describe.skipIf(skip !== null)(`the inbox’s calls in Chromium${skip ? ` (${skip})` : ''}`, { timeout: 60_000 }, () => {
  let store: MemoryStore;
  let inbox: InboxServer;
  let url: string;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;
  const ledger: Ledger = [];
  const desk = deskAgent(ledger, { approvalTtlMs: 3_600_000 });
  const looker = lookupAgent(ledger);
  const clock = new ManualClock(Date.now());
  const dialogs: string[] = [];
  let pausedBetween: [number, number];
  const card = (p: Page, runId: string) => p.locator(`article[data-run="${runId}"]`);

  /**
   * A tab signed in as dana: the first with the token, the others with the session cookie it got.
   * With `live: false` its event stream never connects, so it hears of no change.
   */
  async function signedIn(live = true): Promise<Page> {
    const opened = await browser.context.newPage();
    opened.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    if (!live) await opened.route('**/api/events', (route) => route.abort());
    await opened.goto(page ? url : `${url}/#token=${TOKENS.dana}`);
    await opened.locator('#user', { hasText: 'dana' }).waitFor();
    return opened;
  }

  beforeAll(async () => {
    // The store's clock: `crashedRun` lets the dead process's lease lapse on it.
    store = new MemoryStore({ now: () => clock.now() });
    expect(await crashedRun(store, clock, 'crashed')).toBe('awaiting_approval');
    await pausedRun(store, desk, 'taken', 'refund A-700 100');
    const before = Date.now();
    await pausedRun(store, desk, 'ticking', 'refund A-800 250');
    pausedBetween = [before, Date.now()];
    const run = new Agent({ ...agentOptionsOf(looker), store, runId: 'html' });
    expect(await run.start('look up A-900, then refund it')).toBe('awaiting_approval');
    inbox = createInboxServer({ store, auth: { users: TOKENS }, agents: [desk, looker], pollMs: 100 });
    url = await inbox.listen({ port: 0 });
    browser = await launchChromium();
    page = await signedIn();
    await card(page, 'crashed').waitFor();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await inbox?.close();
  });

  it('says a call another approver decided first cannot be decided again, and changes nothing', async () => {
    // Another tab, which has not heard of the other decision yet (its event stream is held back).
    const behind = await signedIn(false);
    try {
      const taken = card(behind, 'taken');
      await taken.locator('select.choice').selectOption('approve');
      await taken.locator('input.note').fill('looks right');
      const [pending] = (await store.load('taken'))!.pendingCalls;
      const first = await call(url, 'POST', '/api/runs/taken/decisions', {
        token: TOKENS.lee,
        body: { decisions: { [pending!.id]: { approve: false, note: 'duplicate of A-100' } } },
      });
      expect(first.status).toBe(201);
      const version = (await store.load('taken'))?.version;
      await taken.getByRole('button', { name: 'Record decisions' }).click();
      const message = taken.locator('.message.error[role="alert"]');
      await message.waitFor();
      expect(await message.textContent()).toMatch(
        /^A decision is already recorded for this run: nothing was recorded\. \(.*already has a decision recorded \(by "lee"\)/,
      );
      const stored = await store.load('taken');
      expect(stored?.version).toBe(version);
      expect(stored?.decision).toMatchObject({ by: 'lee', decisions: { [pending!.id]: { approve: false } } });
      // The live page shows the other approver’s decision, and no controls for it.
      await card(page, 'taken').locator('.recorded', { hasText: 'Decision recorded by lee' }).waitFor();
      expect(await card(page, 'taken').locator('select.choice').count()).toBe(0);
    } finally {
      await behind.close();
    }
  });

  it('warns that a call in flight at a crash has an unknown outcome, and offers no edit of it', async () => {
    const crashed = card(page, 'crashed');
    const warning = crashed.locator('.warning[role="note"]');
    expect(await warning.textContent()).toMatch(/^⚠ Outcome unknown: this call was in flight when a worker crashed/);
    expect(await crashed.locator('dd').nth(2).textContent()).toBe('2'); // the attempt
    const options = crashed.locator('select.choice option');
    expect(
      await options.evaluateAll((nodes) =>
        nodes.map((n) => [n.getAttribute('value'), (n as HTMLOptionElement).disabled]),
      ),
    ).toEqual([
      ['', false],
      ['approve', false],
      ['edit', true],
      ['deny', false],
    ]);
    expect(await card(page, 'taken').locator('.warning').count()).toBe(0);
    // Sent anyway, with the page’s own session, an edit is refused as the API refuses it.
    const [pending] = (await store.load('crashed'))!.pendingCalls;
    const refused = await page.evaluate(async (id) => {
      const { csrf } = await (await fetch('/api/session')).json();
      const response = await fetch('/api/runs/crashed/decisions', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Tollgate-CSRF': csrf },
        body: JSON.stringify({ decisions: { [id]: { approve: true, args: { order: 'A-9', cents: 1 } } } }),
      });
      return { status: response.status, body: await response.json() };
    }, pending!.id);
    expect(refused.status).toBe(422);
    expect(refused.body.error.message).toMatch(/outcome is unknown/);
    expect((await store.load('crashed'))?.decision).toBeNull();
  });

  it('counts the expiry down live, and shows the call’s key and when it was requested', async () => {
    const ticking = card(page, 'ticking');
    const timer = ticking.locator('.countdown');
    const seconds = async () => {
      const text = (await timer.textContent()) ?? '';
      const [, m, s] = /^expires in (\d+)m (\d\d)s$/.exec(text) ?? [];
      if (m === undefined || s === undefined) throw new Error(`not a countdown: ${text}`);
      return Number(m) * 60 + Number(s);
    };
    const first = await seconds();
    expect(first).toBeGreaterThan(3_500);
    expect(first).toBeLessThanOrEqual(3_600);
    let now = first;
    for (let i = 0; i < 60 && now === first; i++) {
      await new Promise((r) => setTimeout(r, 50));
      now = await seconds();
    }
    expect(now).toBeLessThan(first);
    expect(await ticking.locator('.countdown').count()).toBe(1);

    const terms = await ticking.locator('dl dt').allTextContents();
    const values = await ticking.locator('dl dd').allTextContents();
    const shown = Object.fromEntries(terms.map((term, i) => [term, values[i]]));
    expect(shown.key).toBe('ticking:1');
    const { body } = await call(url, 'GET', '/api/runs/ticking', { token: TOKENS.dana });
    const requestedAt = body.run.pendingCalls[0].requestedAt as string;
    const at = Date.parse(requestedAt);
    expect(at).toBeGreaterThanOrEqual(pausedBetween[0]);
    expect(at).toBeLessThanOrEqual(pausedBetween[1]);
    expect(shown.requested).toBe(await page.evaluate((iso) => new Date(iso).toLocaleString(), requestedAt));
  });

  it('shows HTML in a denial note and in a tool result as text', async () => {
    const html = card(page, 'html');
    await html.locator('select.choice').selectOption('deny');
    await html.locator('input.note').fill(`no: ${HTML}`);
    await html.getByRole('button', { name: 'Record decisions' }).click();
    await html.locator('.recorded', { hasText: 'Decision recorded by dana' }).waitFor();
    await new Worker({ store, agents: [looker] }).drain();
    expect((await store.load('html'))?.status).toBe('done');
    expect(ledger).toEqual([]); // denied: never run
    await html.waitFor({ state: 'detached' });

    await page.getByRole('button', { name: 'Done' }).click();
    const done = card(page, 'html');
    await done.locator('summary').click();
    await done.locator('.history .h-approval').waitFor();
    expect(await done.locator('.history .h-approval').textContent()).toBe(`denied by dana — “no: ${HTML}”`);
    const results = await done.locator('.history .h-tool pre').allTextContents();
    expect(results[0]).toBe(JSON.stringify(`customer note: ${HTML}`, null, 2));
    expect(await page.locator('img, article script').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(dialogs).toEqual([]);
  });
});
