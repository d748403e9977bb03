/**
 * Every ```ts block of README.md and docs/**\/*.md is a program a user could paste: it is
 * type-checked under strict TypeScript and run, against the packed tarball installed with npm in
 * a new project (`"type": "module"`, `module: NodeNext`, the README's recommended setup), so the
 * docs can neither rot nor lean on anything the package does not ship.
 *
 * All blocks are compiled by one `tsc` run, each in its own file (its own module scope); each is
 * then run by `node` as its own process. A false `console.assert` fails the block. Blocks that
 * read TOLLGATE_PG_URL follow the Postgres tests' rule: skipped, saying why, without a server,
 * and never skipped under CI.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CodeBlock, docPages, tsBlocks } from './support/package-docs.js';
import { childEnv, installedProject, packedTarball, tsc } from './support/package-tarball.js';
import { postgresTarget } from './support/postgres.js';

const run = promisify(execFile);

/**
 * The user's compiler options: the README's, with the two checks `strict` leaves out on top
 * (`noUncheckedIndexedAccess` makes `history[2].error` an error; `exactOptionalPropertyTypes`
 * refuses `{ callId: undefined }` for `callId?: string`), so an example that compiles here
 * compiles in any laxer setup too. `skipLibCheck` is on, as `tsc --init` sets it: checking every
 * library's declarations costs ~10 s more, and test/package/pack.int.test.ts checks Tollgate's.
 */
const tsconfig = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    noUncheckedIndexedAccess: true,
    exactOptionalPropertyTypes: true,
    skipLibCheck: true,
    types: ['node'],
    rootDir: 'docs',
    outDir: 'out',
  },
  include: ['docs'],
};

/** Makes a false `console.assert` fail the process, as it fails the example. */
const strictAssert = `
const assert = console.assert;
console.assert = (ok, ...data) => {
  if (!ok) process.exitCode = 1;
  assert(ok, ...data);
};
`;

const blocks = docPages().flatMap(tsBlocks);
const fileOf = (block: CodeBlock) => `${block.page.replace(/\.md$/, '').replace(/[^A-Za-z0-9]+/g, '-')}-${block.index}`;

let project = '';
/** tsc's diagnostics by generated file name (without extension); '' for those in no block. */
const diagnostics = new Map<string, string[]>();

beforeAll(async () => {
  const packed = await packedTarball();
  project = await installedProject(packed, {
    type: 'module',
    link: [
      'better-sqlite3',
      'pg',
      '@types/node',
      '@types/pg',
      'openai',
      '@anthropic-ai/sdk',
      '@ai-sdk/provider',
      '@ai-sdk/openai',
      'ai',
      '@modelcontextprotocol/sdk',
      '@opentelemetry/api',
      '@opentelemetry/sdk-trace-base',
      'hono',
      '@hono/node-server',
      'fast-check',
    ],
  });
  mkdirSync(join(project, 'docs'));
  for (const block of blocks) {
    // `export {}` keeps a block without imports a module, with its own scope and top-level await.
    writeFileSync(join(project, 'docs', `${fileOf(block)}.ts`), `${block.source}\nexport {};\n`);
  }
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));
  writeFileSync(join(project, 'strict-assert.mjs'), strictAssert);
  const output = await tsc(project);
  // Diagnostics look like `docs/README-1.ts(12,5): error TS2339: …`, continuation lines indented.
  let current: string[] | undefined;
  for (const line of output.split('\n')) {
    const match = /^docs\/(.+)\.ts\((\d+),(\d+)\): (.*)$/.exec(line);
    if (match) {
      const [, file = '', row = '0', col = '0', message = ''] = match;
      const block = blocks.find((b) => fileOf(b) === file);
      const where = block ? `${block.page}:${block.fenceLine + Number(row)}:${col}` : `${file}:${row}:${col}`;
      current = diagnostics.get(file) ?? [];
      diagnostics.set(file, current);
      current.push(`${where} ${message}`);
    } else if (line.startsWith(' ') && current) {
      current.push(line);
    } else if (line.trim() !== '') {
      current = diagnostics.get('') ?? [];
      diagnostics.set('', current);
      current.push(line);
    }
  }
}, 600_000);

afterAll(() => {
  if (project) rmSync(project, { recursive: true, force: true });
});

describe('docs examples, against the installed package', () => {
  it('finds the examples of every page', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(12);
    expect(new Set(blocks.map((b) => b.page)).size).toBeGreaterThanOrEqual(4);
  });

  it('compile with no error outside the examples', () => {
    expect(diagnostics.get('') ?? []).toEqual([]);
  });

  for (const block of blocks) {
    const name = `${block.page} example ${block.index} (line ${block.fenceLine})`;
    const usesPostgres = block.source.includes('TOLLGATE_PG_URL');

    it(`${name} type-checks under strict`, () => {
      expect(diagnostics.get(fileOf(block)) ?? []).toEqual([]);
    });

    it(`${name} runs`, async (ctx) => {
      if (usesPostgres) {
        const { skipReason } = await postgresTarget();
        if (skipReason) ctx.skip(skipReason);
      }
      const script = join(project, 'out', `${fileOf(block)}.js`);
      const result = await run(process.execPath, ['--import', './strict-assert.mjs', script], {
        cwd: project,
        env: childEnv(),
        timeout: 60_000,
      }).then(
        (ok) => ({ code: 0, ...ok }),
        (error: { code?: number; stdout?: string; stderr?: string }) => ({
          code: error.code ?? 1,
          stdout: error.stdout ?? '',
          stderr: error.stderr ?? '',
        }),
      );
      expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
    }, 60_000);
  }
});
