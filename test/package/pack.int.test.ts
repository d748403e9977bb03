/**
 * The package as npm packs it and a user installs it: what the tarball holds, and that it works
 * in the project setups the README promises — ESM, CommonJS through `require(esm)`, and
 * TypeScript with `module: NodeNext` in both.
 */
import {
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exec, installedProject, type Packed, packedTarball, tsc } from '../support/package-tarball.js';

const repoRoot = join(import.meta.dirname, '..', '..');
const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
  version: string;
  main: string;
  types: string;
  exports: Record<string, unknown>;
  bin: Record<string, string>;
};

/** Every file path an exports map names, whatever its conditions. */
function targets(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (value && typeof value === 'object') return Object.values(value).flatMap(targets);
  return [];
}
const normal = (path: string) => path.replace(/^\.\//, '');

/** The entry points that need no optional peer (better-sqlite3, pg) to load. */
const driverless = Object.keys(manifest.exports)
  .filter((key) => key !== './package.json' && !/sqlite|postgres/.test(key))
  .map((key) => key.replace(/^\./, 'tollgate'));
const entryPoints = Object.keys(manifest.exports)
  .filter((key) => key !== './package.json')
  .map((key) => key.replace(/^\./, 'tollgate'));

/** The SDKs of the model adapters (tollgate/openai, …) and of tollgate/mcp, optional peers like the drivers. */
const modelSdks = ['openai', '@anthropic-ai/sdk', '@ai-sdk/provider', '@modelcontextprotocol/sdk'];
/** The `tollgate` command's packages, the inbox's web server (and fast-check, for tollgate/testing/fast-check): optional peers too. */
const cliPackages = ['commander', '@inquirer/prompts', 'picocolors', 'yocto-spinner'];
const inboxPackages = ['hono', '@hono/node-server'];

let packed: Packed;
const projects: string[] = [];

beforeAll(async () => {
  packed = await packedTarball();
}, 600_000);

afterAll(() => {
  for (const dir of projects) rmSync(dir, { recursive: true, force: true });
});

describe('npm pack', () => {
  const paths = () => new Set(packed.files.map((f) => f.path));

  it('packs without a warning', () => {
    expect(packed.warnings).toEqual([]);
  });

  it('ships every exports target, the bin, main and types', () => {
    const wanted = [...targets(manifest.exports), ...Object.values(manifest.bin), manifest.main, manifest.types];
    expect(wanted.map(normal).filter((path) => !paths().has(path))).toEqual([]);
  });

  it('ships the license, the README and the TypeScript sources the maps point at', () => {
    for (const path of ['LICENSE', 'README.md', 'package.json', 'src/index.ts', 'machines/index.ts']) {
      expect(paths()).toContain(path);
    }
  });

  it("ships the inbox page's static files beside the compiled server, which reads them from ./page/", () => {
    for (const file of ['index.html', 'inbox.js', 'card.js', 'render.js', 'inbox.css']) {
      expect(paths()).toContain(`dist/src/inbox/page/${file}`);
    }
  });

  it('ships no tests, fixtures, examples, benchmarks or docs', () => {
    const unwanted = [...paths()].filter(
      (path) =>
        /(^|\/)(test|tests|__tests__|fixtures|examples|bench|docs|coverage|reports)\//.test(path) ||
        /\.(test|spec)\.[cm]?[jt]s$|\.tsbuildinfo$/.test(path),
    );
    expect(unwanted).toEqual([]);
  });
});

describe('installed in an ESM project', () => {
  let project = '';
  let pkg = '';

  beforeAll(async () => {
    // No better-sqlite3 nor pg: `tollgate` and the stores without a driver must load without them.
    // The model SDKs are there for the type check: the adapters' declarations name their types.
    project = await installedProject(packed, {
      type: 'module',
      link: ['@types/node', '@types/pg', ...modelSdks, ...cliPackages, ...inboxPackages, 'fast-check'],
    });
    projects.push(project);
    pkg = join(project, 'node_modules', 'tollgate');
  }, 300_000);

  it('has source maps whose sources are all in the package', () => {
    const files = readdirSync(pkg, { recursive: true, encoding: 'utf8' });
    const problems: string[] = [];
    // The inbox page's scripts are hand-written browser code, served as they are: nothing maps to them.
    const compiled = files.filter((f) => /\.(js|d\.ts)$/.test(f) && !/(^|\/)inbox\/page\//.test(f));
    for (const file of compiled) {
      const url = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(readFileSync(join(pkg, file), 'utf8'))?.[1];
      if (!url) problems.push(`${file}: no sourceMappingURL`);
      else if (!files.includes(join(dirname(file), url))) problems.push(`${file}: ${url} is not in the package`);
    }
    const maps = files.filter((f) => f.endsWith('.map'));
    expect(maps.length).toBeGreaterThan(0);
    for (const map of maps) {
      const { sourceRoot = '', sources } = JSON.parse(readFileSync(join(pkg, map), 'utf8')) as {
        sourceRoot?: string;
        sources: string[];
      };
      for (const source of sources) {
        const path = relative(pkg, resolve(pkg, dirname(map), sourceRoot, source));
        if (path.startsWith('..') || !files.includes(path))
          problems.push(`${map}: source ${source} is not in the package`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('points stack traces at the TypeScript sources (node --enable-source-maps)', async () => {
    const script = `import { Agent } from 'tollgate'; try { new Agent({}); } catch (e) { console.log(e.stack); }`;
    const { stdout } = await exec(
      process.execPath,
      ['--enable-source-maps', '--input-type=module', '-e', script],
      project,
    );
    expect(stdout).toMatch(/OptionsError/);
    expect(stdout).toMatch(/node_modules\/tollgate\/src\/\S+\.ts:\d+/);
  });

  it('imports every entry point that needs no database driver', async () => {
    const script = `
      for (const name of ${JSON.stringify(driverless)}) {
        const exports = Object.keys(await import(name));
        if (exports.length === 0) throw new Error(name + ' exports nothing');
      }
      const { Agent } = await import('tollgate');
      const agent = new Agent({ tools: [], policy: () => ({ final: 'ok' }) });
      console.log(await agent.start('go'));`;
    const { stdout } = await exec(process.execPath, ['--input-type=module', '-e', script], project);
    expect(stdout.trim()).toBe('done');
  });

  it('installs the tollgate command', async () => {
    const { stdout } = await exec(join(project, 'node_modules', '.bin', 'tollgate'), ['--help'], project);
    expect(stdout).toMatch(/tollgate/);
  });

  it("type-checks every entry point's declarations, strictly and without skipLibCheck: none loads XState's but tollgate/machine", async () => {
    const check = async (names: string[]) => {
      writeFileSync(
        join(project, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2022',
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            strict: true,
            noUncheckedIndexedAccess: true,
            exactOptionalPropertyTypes: true,
            skipLibCheck: false,
            types: ['node'],
            noEmit: true,
          },
          files: ['entry-points.ts'],
        }),
      );
      writeFileSync(
        join(project, 'entry-points.ts'),
        names.map((name, i) => `import type * as entry${i} from '${name}';\nexport type { entry${i} };\n`).join(''),
      );
      return (await tsc(project)).split(/\n(?! )/).filter((diagnostic) => diagnostic.trim() !== '');
    };
    // @ai-sdk/provider's declarations import the types of json-schema, which it does not depend on
    // (a user of tollgate/ai-sdk installs @types/json-schema): theirs, and the only ones allowed.
    const aiSdk = /^\.\.\/.*@ai-sdk\/provider\/dist\/index\.d\.ts\(\d+,\d+\): error TS7016: .*'json-schema'/;
    const rest = await check(entryPoints.filter((name) => name !== 'tollgate/machine'));
    expect(rest.filter((diagnostic) => !aiSdk.test(diagnostic))).toEqual([]);
    // tollgate/machine is XState's machine, typed by XState: its declarations fail
    // exactOptionalPropertyTypes (xstate's setup.d.ts), and nothing else does.
    const machine = await check(['tollgate/machine']);
    expect(machine.filter((diagnostic) => !/^node_modules\/xstate\//.test(diagnostic))).toEqual([]);
    expect(machine.length).toBeGreaterThan(0); // when XState fixes it, say so in the README
  }, 180_000);
});

/** The packages in a project's node_modules (scoped ones as `@scope/name`), but `tollgate`. */
function installedPackages(project: string): string[] {
  const modules = join(project, 'node_modules');
  return readdirSync(modules)
    .filter((name) => !name.startsWith('.'))
    .flatMap((name) => (name.startsWith('@') ? readdirSync(join(modules, name)).map((n) => `${name}/${n}`) : [name]))
    .filter((name) => name !== 'tollgate')
    .sort();
}

/** Bytes under `dir`, files only (symlinks not followed). */
function bytesUnder(dir: string): number {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .reduce((sum, entry) => sum + statSync(join(entry.parentPath, entry.name)).size, 0);
}

describe('a library install (npm install tollgate, nothing else)', () => {
  let project = '';

  beforeAll(async () => {
    project = await installedProject(packed, { type: 'module' });
    projects.push(project);
  }, 300_000);

  it('pulls in the runtime dependencies only: no CLI, web server or driver package', () => {
    const installed = installedPackages(project);
    console.log(
      `library install: ${installed.length} packages beside tollgate (${installed.join(', ')}), ${(bytesUnder(join(project, 'node_modules')) / 1e6).toFixed(1)} MB in node_modules`,
    );
    expect(installed).toEqual(['@noble/hashes', '@standard-schema/spec', 'leven', 'xstate', 'zod']);
    expect(installed.length).toBeLessThanOrEqual(6);
  });

  it('runs an agent', async () => {
    const script = `import { Agent } from 'tollgate';
      const agent = new Agent({ tools: [], policy: () => ({ final: 'ok' }) });
      console.log(await agent.start('go'));`;
    const { stdout } = await exec(process.execPath, ['--input-type=module', '-e', script], project);
    expect(stdout.trim()).toBe('done');
  });

  it('the tollgate command says in one line what to install for it, and works once it is installed', async () => {
    const bin = join(project, 'node_modules', '.bin', 'tollgate');
    const missing = await exec(bin, ['--help'], project).catch((error: Error) => error);
    expect(missing).toBeInstanceOf(Error);
    expect((missing as Error).message).toMatch(/exited 1\n/);
    expect((missing as Error).message).toContain(
      'tollgate: the tollgate command needs commander, which is not installed (the library does not): npm install commander@14 @inquirer/prompts@7 picocolors@1 yocto-spinner@1\n',
    );
    for (const name of cliPackages) {
      const target = join(project, 'node_modules', name);
      mkdirSync(dirname(target), { recursive: true });
      symlinkSync(realpathSync(join(repoRoot, 'node_modules', name)), target, 'dir');
    }
    expect((await exec(bin, ['--version'], project)).stdout.trim()).toBe(manifest.version);
    // The inbox's web server is needed by `tollgate serve` only, and said so.
    const serve = await exec(bin, ['serve', '--store', join(project, 'runs.db')], project).catch(
      (error: Error) => error,
    );
    expect((serve as Error).message).toContain(
      'tollgate: tollgate serve needs @hono/node-server, which is not installed: npm install hono@4 @hono/node-server@2\n',
    );
  });
});

describe('installed in a CommonJS project (npm init -y)', () => {
  let project = '';

  beforeAll(async () => {
    project = await installedProject(packed, {
      type: 'commonjs',
      link: ['@types/node', ...inboxPackages, 'fast-check'],
    });
    projects.push(project);
  }, 300_000);

  it('require() gives the very module that import gives (no second copy)', async () => {
    const script = `
      const tollgate = require('tollgate');
      for (const name of ${JSON.stringify(driverless)}) require(name);
      const agent = new tollgate.Agent({ tools: [], policy: () => ({ final: 'ok' }) });
      agent.start('go').then(async (status) => {
        const esm = await import('tollgate');
        console.log(status, esm.Agent === tollgate.Agent);
      });`;
    const { stdout, stderr } = await exec(process.execPath, ['-e', script], project);
    expect(stdout.trim()).toBe('done true');
    expect(stderr).toBe('');
  });

  it('compiles with TypeScript (module NodeNext, no "type": "module") and runs', async () => {
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          skipLibCheck: true,
          types: ['node'],
          outDir: 'out',
        },
        files: ['index.ts'],
      }),
    );
    writeFileSync(
      join(project, 'index.ts'),
      [
        "import { Agent, type Policy } from 'tollgate';",
        "import { ManualClock } from 'tollgate/testing';",
        "const policy: Policy = () => ({ final: 'ok' });",
        'const agent = new Agent({ policy, tools: [], clock: new ManualClock(0) });',
        'agent.start("go").then((status) => console.log(status));',
        '',
      ].join('\n'),
    );
    expect(await tsc(project)).toBe('');
    expect(readFileSync(join(project, 'out', 'index.js'), 'utf8')).toMatch(/require\("tollgate"\)/);
    const { stdout } = await exec(process.execPath, [join(project, 'out', 'index.js')], project);
    expect(stdout.trim()).toBe('done');
  }, 120_000);
});
