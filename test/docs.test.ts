/**
 * Every ```ts block in README.md and docs/*.md is a program that must run: the docs cannot rot.
 * (```typescript blocks are signatures, not programs.) Blocks import 'tollgate' by name; the
 * vitest config points that at the sources.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const outDir = join(root, 'test', '.generated');
const files = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

function blocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1] as string);
}

describe('docs examples run', () => {
  mkdirSync(outDir, { recursive: true });
  for (const file of files) {
    const code = blocks(readFileSync(join(root, file), 'utf8'));
    code.forEach((source, i) => {
      it(`${file} example ${i + 1}`, async () => {
        const path = join(outDir, `${file.replace(/[/.]/g, '_')}_${i + 1}.ts`);
        // `// @ts-nocheck`: snippets favour brevity over annotations; they are run, not type-checked.
        writeFileSync(path, `// @ts-nocheck\n${source}\nexport {};\n`);
        const failures: unknown[] = [];
        const original = console.assert;
        console.assert = (ok: unknown, ...rest: unknown[]) => void (ok || failures.push(rest));
        try {
          await import(path);
        } finally {
          console.assert = original;
        }
        expect(failures).toEqual([]);
      });
    });
  }
  it('every doc page with examples has at least one', () => {
    expect(files.filter((f) => blocks(readFileSync(join(root, f), 'utf8')).length > 0).length).toBeGreaterThanOrEqual(
      3,
    );
  });
});
