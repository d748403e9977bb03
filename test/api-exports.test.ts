/**
 * docs/api.md lists every name the main entry point exports, and the main entry point keeps the
 * store author's helpers out: they are in `tollgate/store-kit`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as storeKit from '../src/store-kit.js';

const root = join(import.meta.dirname, '..');

/** The names an entry point's `export { … } from` lists declare, types included. */
function exportedNames(file: string): string[] {
  const source = readFileSync(join(root, file), 'utf8');
  return [...source.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}\s*from/g)].flatMap((m) =>
    (m[1] as string)
      .split(',')
      .map((name) => name.trim().replace(/^type\s+/, ''))
      .filter(Boolean),
  );
}

describe('the main entry point', () => {
  const main = exportedNames('src/index.ts');
  const section = readFileSync(join(root, 'docs/api.md'), 'utf8').split('## What `tollgate` exports')[1] ?? '';

  it('is listed whole in docs/api.md', () => {
    const listed = new Set([...section.matchAll(/`([A-Za-z_]+)`/g)].map((m) => m[1]));
    expect(main.filter((name) => !listed.has(name))).toEqual([]);
  });

  it("exports none of a store author's helpers: they are in tollgate/store-kit", () => {
    const helpers = Object.keys(storeKit).filter((name) => /^[a-z]/.test(name) || name.startsWith('MAX_'));
    expect(main.filter((name) => helpers.includes(name))).toEqual([]);
  });
});
