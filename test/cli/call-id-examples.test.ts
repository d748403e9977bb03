/**
 * The call ids the help and docs/cli.md show are real: each has the form the runtime makes
 * (`<key>#<attempt>@<digest of the tool and its arguments>`), and the support-desk one is the id
 * of that very call, so that copying an example shows what `--call-id` takes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { callIdOf } from '../../machines/calls.js';

const root = join(import.meta.dirname, '..', '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const sources = ['src/cli/help.ts', 'src/cli/commands/decide.ts', 'docs/cli.md', 'README.md'];
const idsIn = (text: string) => [...text.matchAll(/--call-id '([^']+)'/g)].map((m) => m[1] as string);

describe('call ids in examples', () => {
  it('have the form of a real id', () => {
    const ids = sources.flatMap((path) => idsIn(read(path)).map((id) => `${path}: ${id}`));
    expect(ids.length).toBeGreaterThanOrEqual(5);
    expect(ids.filter((line) => !/: [^#\s]+:\d+#\d+@[0-9a-f]{32}$/.test(line))).toEqual([]);
  });

  it("are the support-desk refund's id where they name ticket-42", () => {
    const refund = callIdOf('ticket-42:2', 1, 'refund', { order: 'A-1001', amount: 129 });
    const ticket = sources.flatMap((path) => idsIn(read(path))).filter((id) => id.startsWith('ticket-42:'));
    expect(ticket.length).toBeGreaterThan(0);
    expect(new Set(ticket)).toEqual(new Set([refund]));
    expect(read('docs/cli.md')).toContain(`call id   ${refund}\n`);
  });
});
