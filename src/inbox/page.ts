/**
 * The page's static files (page/: index.html, inbox.js, card.js, render.js, inbox.css), shipped in the package and
 * read once when a server is made. The page holds no data: everything comes from the API, so
 * the files themselves need no authentication.
 */
import { readFileSync } from 'node:fs';
import type { Hono } from 'hono';
import { SystemError } from '../errors.js';

const FILES: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/inbox.js': { file: 'inbox.js', type: 'text/javascript; charset=utf-8' },
  '/card.js': { file: 'card.js', type: 'text/javascript; charset=utf-8' },
  '/render.js': { file: 'render.js', type: 'text/javascript; charset=utf-8' },
  '/inbox.css': { file: 'inbox.css', type: 'text/css; charset=utf-8' },
};

/** The files by URL path. @throws SystemError if the package lacks them (a broken build). */
export function readPage(): Map<string, { body: string; type: string }> {
  const page = new Map<string, { body: string; type: string }>();
  for (const [path, { file, type }] of Object.entries(FILES)) {
    const url = new URL(`./page/${file}`, import.meta.url);
    try {
      page.set(path, { body: readFileSync(url, 'utf8'), type });
    } catch (error) {
      throw new SystemError(
        `the inbox page's file ${url.pathname} is missing: reinstall tollgate, or run npm run build`,
        {
          cause: error,
        },
      );
    }
  }
  return page;
}

/** Serves the page's files on `app`. */
export function servePage(app: Hono<any>, page: Map<string, { body: string; type: string }>): void {
  for (const [path, { body, type }] of page) {
    app.get(path, (c) => c.body(body, 200, { 'Content-Type': type, 'Cache-Control': 'no-cache' }));
  }
  app.get('/favicon.ico', (c) => c.body(null, 204));
}
