/**
 * Debian's Chromium for the browser tests, driven by playwright-core (which downloads no browser
 * of its own). Without /usr/bin/chromium the browser tests are skipped, saying why, and the reason
 * is written to `reports/chromium-skipped.txt`; with `CI` set there is no skipping: `.ci/run`
 * installs the package, and a missing browser is an error.
 */
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

export const CHROMIUM = process.env.TOLLGATE_CHROMIUM ?? '/usr/bin/chromium';

/** Why the browser tests must be skipped, or null when Chromium is there. */
export function chromiumSkipReason(): string | null {
  if (existsSync(CHROMIUM)) return null;
  const message = `browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`;
  if (process.env.CI) throw new Error(`${message}. CI is set, so the browser tests must run.`);
  console.warn(`\n⚠ ${message}\n`);
  mkdirSync('reports', { recursive: true });
  appendFileSync('reports/chromium-skipped.txt', `${new Date().toISOString()} ${message}\n`);
  return message;
}

/**
 * Headless Chromium with a new, empty profile, and the flags that keep it off the network (the
 * machine's network is closed: without them it tries Google's hosts at every start).
 */
export async function launchChromium(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), 'tollgate-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    context,
    async close() {
      await context.close().catch(() => {});
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
