/**
 * The chat UI end to end in Chromium: a page on the AI SDK's own chat client (test/models/chat-page)
 * talks to a chat route built on `toUIMessageStream`; the refund waits behind the page's Approve
 * button, and the run goes on once it is pressed; a Deny runs nothing.
 */
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from '../../src/index.js';
import { chromiumSkipReason, launchChromium } from '../support/chromium.js';
import { chatServer, supportDesk } from './chat-support.js';

const skip = chromiumSkipReason();
const PAGE = fileURLToPath(new URL('./chat-page/page.ts', import.meta.url));
const HTML = `<!doctype html><html><head><meta charset="utf-8"><title>chat</title></head><body>
<ol id="log"></ol><form id="ask"><input id="text" aria-label="Message"><button>Send</button></form>
<script type="module" src="/page.js"></script></body></html>`;

/** The page's script, bundled for the browser with `ai` in it. */
async function bundle(): Promise<string> {
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: [PAGE],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    write: false,
    logLevel: 'warning',
  });
  return result.outputFiles[0]?.text ?? '';
}

// A browser on a loaded CI machine is slow: each step has a minute.
describe.skipIf(skip !== null)(`the AI SDK chat UI in Chromium${skip ? ` (${skip})` : ''}`, { timeout: 60_000 }, () => {
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let server: Awaited<ReturnType<typeof chatServer>>;
  const desks = new Map<string, ReturnType<typeof supportDesk>>();

  beforeAll(async () => {
    const script = await bundle();
    server = await chatServer(
      (id) => {
        const desk = supportDesk();
        desks.set(id, desk);
        return new Agent({ runId: id, tools: desk.tools, policy: desk.policy });
      },
      (req, res) => {
        if (req.url === '/page.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
        else res.writeHead(200, { 'content-type': 'text/html' }).end(HTML);
      },
    );
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  async function asked(): Promise<Page> {
    const page = await browser.context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(server.url);
    await page.getByLabel('Message').fill('Refund A-1, it arrived broken');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('[data-tool="refund"][data-state="approval-requested"]').waitFor();
    expect(errors).toEqual([]);
    return page;
  }

  it('shows the streamed text and the lookup, holds the refund behind Approve, then shows its result and the answer', async () => {
    const page = await asked();
    expect(await page.locator('[data-tool="lookup_order"]').getAttribute('data-state')).toBe('output-available');
    expect(await page.locator('li[data-role="user"] p.text').allTextContents()).toEqual([
      'Refund A-1, it arrived broken',
    ]);
    expect(await page.locator('li[data-role="assistant"] p.text').allTextContents()).toEqual(['Let me look.']);
    const [chatId] = [...server.runs.keys()].slice(-1);
    const desk = desks.get(chatId ?? '');
    expect(desk?.refunds).toEqual([]);
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.locator('[data-tool="refund"][data-state="output-available"]').waitFor();
    await page.locator('p.text', { hasText: 'Refunded $60.' }).waitFor();
    await page.locator('body[data-status="ready"]').waitFor();
    expect(desk?.refunds).toEqual([{ order: 'A-1', amount: 60, key: `${chatId}:2` }]);
    expect(server.runs.get(chatId ?? '')?.state.status).toBe('done');
    expect(await page.locator('li').evaluateAll((items) => items.map((li) => li.getAttribute('data-role')))).toEqual([
      'user',
      'assistant',
    ]);
    await page.close();
  });

  it('a Deny in the page runs nothing and shows the call denied', async () => {
    const page = await asked();
    const [chatId] = [...server.runs.keys()].slice(-1);
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.locator('[data-tool="refund"][data-state="output-denied"]').waitFor();
    await page.locator('body[data-status="ready"]').waitFor();
    expect(desks.get(chatId ?? '')?.refunds).toEqual([]);
    expect(server.runs.get(chatId ?? '')?.state.status).toBe('done');
    await page.close();
  });
});
