/**
 * The package's documentation as the docs tests read it: README.md and every Markdown page under
 * docs/ (a new page is picked up without a change here), parsed with remark so that a fence inside
 * a list or a quote counts and one inside another code block does not.
 *
 * Convention: a ```ts block is a program (type-checked and run); ```typescript shows signatures,
 * ```sh and ```text show commands and output.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { remark } from 'remark';

/** The repository's root folder. */
export const repoRoot = join(import.meta.dirname, '..', '..');

/** README.md and docs/**\/*.md, repo-relative, in a stable order. */
export function docPages(): string[] {
  const docs = readdirSync(join(repoRoot, 'docs'), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.md'))
    .map((entry) => relative(repoRoot, join(entry.parentPath, entry.name)))
    .sort();
  return ['README.md', ...docs];
}

export interface CodeBlock {
  /** The page, repo-relative. */
  page: string;
  /** 1-based among the page's ```ts blocks. */
  index: number;
  /** The line of the opening fence: line n of the block is line `fenceLine + n` of the page. */
  fenceLine: number;
  source: string;
}

interface Node {
  type: string;
  lang?: string | null;
  value?: string;
  url?: string;
  position?: { start: { line: number } };
  children?: Node[];
}

/** Every node of the page's syntax tree, depth first. */
function nodes(page: string): Node[] {
  const all: Node[] = [];
  const visit = (node: Node): void => {
    all.push(node);
    node.children?.forEach(visit);
  };
  visit(remark().parse(readFileSync(join(repoRoot, page), 'utf8')) as Node);
  return all;
}

/** The page's ```ts blocks. */
export function tsBlocks(page: string): CodeBlock[] {
  return nodes(page)
    .filter((node) => node.type === 'code' && node.lang === 'ts')
    .map((node, i) => ({ page, index: i + 1, fenceLine: node.position?.start.line ?? 0, source: node.value ?? '' }));
}

/** The page's links and images to files (no URL scheme, not only a `#heading`), with their lines. */
export function relativeLinks(page: string): { url: string; line: number }[] {
  return nodes(page)
    .filter((node) => ['link', 'image', 'definition'].includes(node.type) && node.url !== undefined)
    .map((node) => ({ url: node.url ?? '', line: node.position?.start.line ?? 0 }))
    .filter(({ url }) => !/^([a-z][a-z0-9+.-]*:|\/\/|#)/i.test(url));
}
