/**
 * The repository's own rules, checked so they cannot rot: fast tests start no process (those
 * are `*.int.test.ts`, run by `npm run test:int` and by `npm test`, not by `npm run test:fast`),
 * and an example's header names the command that really runs it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..');
const scripts: Record<string, string> = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts;

function filesUnder(dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f));
}

/** The relative imports of a test module, resolved to repository paths (`.js` → `.ts`). */
function localImports(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const specs = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((m) => m[1] as string);
  return specs.map((s) => relative(root, resolve(root, dirname(file), s)).replace(/\.js$/, '.ts'));
}

/** Whether `file`, or a test module it imports (transitively), starts processes. */
function startsProcesses(file: string, seen = new Set<string>()): string | null {
  if (seen.has(file)) return null;
  seen.add(file);
  const text = readFileSync(join(root, file), 'utf8');
  if (/^import [^;]* from 'node:child_process';/m.test(text)) return file;
  for (const dep of localImports(file)) {
    if (!dep.startsWith('test/')) continue; // the library itself starts no process in a test
    const found = startsProcesses(dep, seen);
    if (found) return found;
  }
  return null;
}

describe('fast tests and integration tests', () => {
  const tests = filesUnder('test').filter((f) => f.endsWith('.test.ts'));

  it('a test that starts a process is an *.int.test.ts', () => {
    const fast = tests.filter((f) => !f.endsWith('.int.test.ts'));
    expect(fast.length).toBeGreaterThan(20);
    const offenders = fast.flatMap((f) => {
      const via = startsProcesses(f);
      return via ? [`${f} (through ${via})`] : [];
    });
    expect(offenders).toEqual([]);
  });

  it('the check sees a process started through a helper module', () => {
    expect(startsProcesses('test/resume-process.int.test.ts')).toBe('test/resume-process.int.test.ts');
    expect(startsProcesses('test/model/paths.int.test.ts')).toBe('test/model/support/spawn.ts');
  });

  it('test:fast leaves the integration tests out, test:int runs only them, npm test runs both', () => {
    expect(scripts['test:fast']).toMatch(/vitest run --exclude "test\/\*\*\/\*\.int\.test\.ts"/);
    expect(scripts['test:int']).toBe('vitest run int.test');
    expect(scripts.test).toBe('vitest run');
  });
});

describe('examples', () => {
  const examples = filesUnder('docs/examples');

  it("an example's header names the npm command that runs it", () => {
    const named = examples.flatMap((file) => {
      const header = /^\/\*\*\s*\n\s*\* `npm (?:run )?([\w:-]+)`:/.exec(readFileSync(join(root, file), 'utf8'));
      return header ? [[file, header[1] as string] as const] : [];
    });
    expect(named.map(([, script]) => script).sort()).toEqual(['example', 'start']);
    for (const [file, script] of named) {
      const built = file.replace(/^docs\/examples\//, 'dist/docs/examples/').replace(/\.ts$/, '.js');
      expect(scripts[script], `${file} says npm ${script}`).toContain(built);
    }
  });
});
