/**
 * The model suites' figures in docs/testing.md: each suite renders what it ran (paths, steps,
 * resumes, commands, what the moves did to the calls) and either writes it into its own generated
 * block (`TOLLGATE_WRITE_FIGURES=1`) or checks that the block holds exactly that. The suites run
 * with fixed seeds, so their figures are the same on every run: a stale block is a failing test,
 * and nobody writes a figure by hand.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const DOC = fileURLToPath(new URL('../../../docs/testing.md', import.meta.url));
/** Held while one suite rewrites the doc (the suites run in parallel workers); only when writing. */
const LOCK = `${DOC}.lock`;

export const WRITE_FIGURES = process.env.TOLLGATE_WRITE_FIGURES === '1';

/**
 * Whether this run is the fixed one the block describes: any override of seed, size or mode makes
 * other figures, which are printed but neither written nor checked.
 */
export const FIXED_RUN = ![
  'TOLLGATE_SEED',
  'TOLLGATE_RUNS',
  'TOLLGATE_PATH',
  'TOLLGATE_REPLAY',
  'TOLLGATE_SOAK',
  'TOLLGATE_MUTATION',
].some((name) => process.env[name] !== undefined && process.env[name] !== '');

/** A count as the docs write it: 14,507. */
export const n = (x: number): string => x.toLocaleString('en-US');

/** `a 3, b 2` from counts, largest first (ties by name, so the text is the same every run). */
export function tally(counts: ReadonlyMap<string, number>, names: readonly string[] = [...counts.keys()]): string {
  return names
    .map((name) => [name, counts.get(name) ?? 0] as const)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([name, count]) => `${name} ${n(count)}`)
    .join(', ');
}

const pattern = (suite: string) =>
  new RegExp(`(<!-- model-figures:${suite}:start[^>]*-->\\n)([\\s\\S]*?)(<!-- model-figures:${suite}:end -->)`);

/** The command that writes a suite's block, as the block and a stale-block failure name it. */
export const writeCommand = (file: string) => `TOLLGATE_WRITE_FIGURES=1 npx vitest run ${file}`;

function withLock<T>(body: () => T): T {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || Date.now() > deadline) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
  }
  try {
    return body();
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

/**
 * The suite's block as docs/testing.md has it, and as this run makes it (`lines`, one list item
 * each). With `TOLLGATE_WRITE_FIGURES=1` the block is written first, so the two agree.
 */
export function figures(suite: string, lines: readonly string[]): { inDoc: string | null; ran: string } {
  const ran = `${lines.map((line) => `- ${line}`).join('\n')}\n`;
  const read = () => pattern(suite).exec(readFileSync(DOC, 'utf8'));
  if (!WRITE_FIGURES) return { inDoc: read()?.[2] ?? null, ran };
  return withLock(() => {
    const doc = readFileSync(DOC, 'utf8');
    if (!pattern(suite).test(doc)) return { inDoc: null, ran };
    writeFileSync(
      DOC,
      doc.replace(pattern(suite), (_, start: string, _old: string, end: string) => start + ran + end),
    );
    return { inDoc: read()?.[2] ?? null, ran };
  });
}
