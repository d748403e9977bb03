/** `list`'s one order, in every store: by `updatedAt`, then run id, in code-point order. */
import type { RunSummary } from './contract.js';

/**
 * Strings in code-point order: the UTF-8 byte order that SQLite's BINARY and Postgres's
 * `COLLATE "C"` sort by. Not JavaScript's `<` (UTF-16 code units: an emoji would sort before
 * U+FF5A), not `localeCompare` (a locale's order: 'a' before 'B'). No allocation.
 */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) < codePointRank(y) ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/**
 * Code units rank like the code points they start once surrogates (D800–DFFF, the first half of
 * an astral character, U+10000 and up) move above E000–FFFF, which they outrank as code points.
 */
function codePointRank(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit < 0xe000 ? unit + 0x2000 : unit - 0x800;
}

/** `list`'s order in every store: oldest `updatedAt` first, then run id in code-point order. */
export function compareRuns(
  a: Pick<RunSummary, 'runId' | 'updatedAt'>,
  b: Pick<RunSummary, 'runId' | 'updatedAt'>,
): number {
  return compareCodePoints(a.updatedAt, b.updatedAt) || compareCodePoints(a.runId, b.runId);
}
