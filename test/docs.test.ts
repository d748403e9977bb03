/**
 * The docs' links: every link in README.md and docs/**\/*.md to a file or a heading resolves, and
 * stays inside the repository (a link to a file beside the checkout works on one machine only).
 * The examples are checked by docs.int.test.ts, against the packed package.
 */

import { dirname, join, relative, resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import { remark } from 'remark';
import { engine } from 'unified-engine';
import { describe, expect, it } from 'vitest';
import { docPages, relativeLinks, repoRoot } from './support/package-docs.js';

const pages = docPages();

describe('docs links', () => {
  it('reads README.md and every page under docs/', () => {
    expect(pages).toContain('README.md');
    expect(pages.filter((page) => page.startsWith('docs/')).length).toBeGreaterThanOrEqual(6);
  });

  it('point inside the repository', () => {
    const outside = pages.flatMap((page) =>
      relativeLinks(page)
        .filter(({ url }) => {
          const path = decodeURI(url.replace(/[#?].*$/, ''));
          const target = path.startsWith('/') ? join(repoRoot, path) : resolve(repoRoot, dirname(page), path);
          return relative(repoRoot, target).startsWith('..');
        })
        .map(({ url, line }) => `${page}:${line} ${url}`),
    );
    expect(outside).toEqual([]);
  });

  it('resolve to existing files and headings', async () => {
    // remark-validate-links checks files and GitHub-style heading anchors across all the pages;
    // `repository: false`: links are checked as relative paths, whatever the git remote is.
    const files = await new Promise<{ path: string; messages: { line?: number | null; reason: string }[] }[]>(
      (done, fail) =>
        engine(
          {
            processor: remark,
            // Given to the engine, not with .use(): only then does the plugin get the file set,
            // which it needs to check `page.md#heading` links between pages.
            plugins: [['remark-validate-links', { repository: false }]],
            cwd: repoRoot,
            files: pages,
            quiet: true,
            streamError: new PassThrough(),
          },
          (error, _code, context) => (error ? fail(error) : done(context?.files ?? [])),
        ),
    );
    const broken = files.flatMap((file) =>
      file.messages.map((m) => `${relative(repoRoot, resolve(repoRoot, file.path))}:${m.line} ${m.reason}`),
    );
    expect(broken).toEqual([]);
  });
});
