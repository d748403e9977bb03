/**
 * docs/architecture.md kept true to the code: the layers may import only what the page says, every
 * path the page names is a file or folder of the repository, and every reference to a docs page
 * from the code resolves (to the page, and to the section it quotes).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');

/** The source files under `dir`, not walking into installed packages (bench/ has its own). */
function sources(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules' && !entry.name.startsWith('.')) found.push(...sources(path));
    } else if (entry.name.endsWith('.ts') || entry.name.endsWith('.mjs')) {
      found.push(path);
    }
  }
  return found;
}

/** Every module a source file imports: repository paths for relative imports, package names for the rest. */
function importsOf(file: string): string[] {
  const text = read(file);
  const specs = [
    ...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?from\s*'([^']+)'|import\(\s*'([^']+)'\s*\)/g),
  ].map((m) => (m[1] ?? m[2]) as string);
  return specs.map((s) =>
    s.startsWith('.') ? relative(root, resolve(root, dirname(file), s)).replace(/\.js$/, '.ts') : s,
  );
}

const below = (path: string, folder: string) => path === folder || path.startsWith(`${folder}/`);

/** The layer rules of docs/architecture.md, "Layers": what files under each folder must not import. */
const rules: { layer: string; forbidden: (target: string) => boolean; why: string }[] = [
  {
    layer: 'machines',
    forbidden: (t) => !(below(t, 'machines') || t === 'xstate' || t.startsWith('@noble/hashes/')),
    why: 'the machine imports only xstate, a hash, and itself',
  },
  {
    layer: 'src/checkpoint',
    forbidden: (t) =>
      t.startsWith('src/') && !below(t, 'src/checkpoint') && t !== 'src/errors.ts' && t !== 'src/json.ts',
    why: 'the codec imports the machine and the shared leaves only',
  },
  {
    layer: 'src/store',
    forbidden: (t) =>
      ['src/stores', 'src/runtime', 'src/worker', 'src/cli', 'src/inbox'].some((f) => below(t, f)) ||
      t === 'src/agent.ts',
    why: 'the store kit is below the backends and the runtime',
  },
  {
    layer: 'src/runtime',
    forbidden: (t) =>
      ['src/stores', 'src/worker', 'src/cli', 'src/inbox'].some((f) => below(t, f)) || t === 'src/agent.ts',
    why: 'the runtime knows the store contract, never a backend, and never what sits on it',
  },
  {
    layer: 'src/models',
    forbidden: (t) =>
      ['src/runtime', 'src/stores', 'src/store', 'src/worker', 'src/cli', 'src/inbox'].some((f) => below(t, f)) ||
      t === 'src/agent.ts',
    why: 'an adapter maps an SDK to a policy',
  },
  {
    layer: 'src/mcp',
    forbidden: (t) =>
      ['src/runtime', 'src/stores', 'src/store', 'src/worker', 'src/cli', 'src/inbox'].some((f) => below(t, f)) ||
      t === 'src/agent.ts',
    why: 'MCP tools are tools',
  },
];

describe('the layers of docs/architecture.md', () => {
  for (const { layer, forbidden, why } of rules) {
    it(`${layer}: ${why}`, () => {
      const files = sources(layer);
      expect(files.length).toBeGreaterThan(0);
      const offenders = files.flatMap((file) =>
        importsOf(file)
          .filter(forbidden)
          .map((t) => `${file} → ${t}`),
      );
      expect(offenders).toEqual([]);
    });
  }

  it('the check sees an import that breaks a rule', () => {
    // src/agent.ts imports the runtime: that import would break the store kit's rule and the runtime's.
    const agentImports = importsOf('src/agent.ts');
    expect(agentImports.some((t) => below(t, 'src/runtime'))).toBe(true);
    const storeKit = rules.find((r) => r.layer === 'src/store');
    expect(storeKit?.forbidden('src/stores/sqlite.ts')).toBe(true);
    expect(storeKit?.forbidden('src/checkpoint/index.ts')).toBe(false);
  });
});

describe('docs/architecture.md', () => {
  const page = read('docs/architecture.md');

  it('names only paths that exist', () => {
    const named = new Set(
      [...page.matchAll(/(?<![\w/.-])((?:src|machines|test|docs|bench)\/[\w./*-]*[\w*])/g)].map((m) => m[1] as string),
    );
    expect(named.size).toBeGreaterThan(20);
    const missing = [...named].filter((path) => !path.includes('*') && !existsSync(join(root, path)));
    expect(missing).toEqual([]);
  });
});

describe('references from the code', () => {
  const code = [...sources('src'), ...sources('machines'), ...sources('test'), ...sources('bench')];

  it('point into the repository: no design brief outside it is cited', () => {
    const pages = [
      'README.md',
      ...readdirSync(join(root, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${f}`),
    ];
    const outside = [...code, ...pages].filter(
      (file) => /ARCHITECTURE(\.md)?\b/.test(read(file)) && file !== 'test/architecture.test.ts',
    );
    expect(outside).toEqual([]);
  });

  it('name docs pages that exist, and sections of them that exist', () => {
    const headings = new Map<string, Set<string>>();
    const headingsOf = (doc: string) => {
      let found = headings.get(doc);
      if (!found) {
        found = new Set([...read(doc).matchAll(/^#+\s+(.+)$/gm)].map((m) => (m[1] as string).trim().toLowerCase()));
        headings.set(doc, found);
      }
      return found;
    };
    // A section is named by its heading, or by the heading's words before a colon.
    const names = (found: Set<string>, section: string) =>
      [...found].some(
        (heading) => heading === section.toLowerCase() || heading.startsWith(`${section.toLowerCase()}:`),
      );
    const broken: string[] = [];
    let seen = 0;
    for (const file of code.filter((f) => f !== 'test/architecture.test.ts')) {
      // "docs/x.md" and "docs/x.md, "Section"" (the section in quotes), possibly across a line break
      // inside a comment.
      const text = read(file).replace(/\n\s*(?:\*|\/\/)\s*/g, ' ');
      for (const m of text.matchAll(/\b(docs\/[\w-]+\.md)(?:,\s*"([^"]+)")?/g)) {
        const doc = m[1] as string;
        seen++;
        if (!existsSync(join(root, doc))) broken.push(`${file}: ${doc}`);
        else if (m[2] && !names(headingsOf(doc), m[2])) broken.push(`${file}: ${doc}, "${m[2]}"`);
      }
    }
    expect(seen).toBeGreaterThan(10);
    expect(broken).toEqual([]);
  });
});
