// The file store's journal format: `<UTF-8 byte length>:<entry>\n` per entry. An all-ASCII
// journal is decoded once and cut by string index; any other byte by byte. Both must read back
// exactly what was written, and refuse the same damage.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeEntries, encodeEntries } from '../../src/stores/file/format.js';

/** The journal read entry by entry, each length and text decoded from its own bytes. */
function reference(bytes: Buffer, count: number): string[] | 'damaged' {
  const out: string[] = [];
  let at = 0;
  while (at < bytes.length) {
    const colon = bytes.indexOf(0x3a, at);
    const digits = colon <= at ? '' : bytes.toString('latin1', at, colon);
    if (!/^(0|[1-9][0-9]*)$/.test(digits)) return 'damaged';
    const end = colon + 1 + Number(digits);
    if (bytes[end] !== 0x0a) return 'damaged';
    out.push(bytes.toString('utf8', colon + 1, end));
    at = end + 1;
  }
  return out.length === count ? out : 'damaged';
}

const decoded = (bytes: Buffer, count: number): string[] | 'damaged' => {
  try {
    return decodeEntries(bytes, count, '/j.log', 'r');
  } catch (error) {
    expect(error).toMatchObject({ name: 'CheckpointError', runId: 'r' });
    return 'damaged';
  }
};

describe('the file store journal', () => {
  it('reads back any entries written, ASCII or not', () => {
    const entry = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.json());
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 12 }), (entries) => {
        expect(decoded(encodeEntries(entries), entries.length)).toEqual(entries);
      }),
    );
  });

  it('refuses exactly what an entry-by-entry reader refuses, on any bytes', () => {
    const chunk = fc.oneof(
      fc.constantFrom('0', '1', '2', '3', '9', ':', '\n', 'a', '-', ' ', '+', 'x', 'e'),
      fc.constantFrom('é', '✓', '😀').map((c) => c), // multi-byte: the byte-by-byte path
      fc.string({ maxLength: 4 }).map((s) => `${Buffer.byteLength(s)}:${s}\n`), // well-formed entries
    );
    fc.assert(
      fc.property(fc.array(chunk, { maxLength: 16 }), fc.nat({ max: 6 }), (parts, count) => {
        const bytes = Buffer.from(parts.join(''), 'utf8');
        expect(decoded(bytes, count)).toEqual(reference(bytes, count));
      }),
      { numRuns: 3_000 },
    );
    // Once read with Number(): `\n-4:` sent the reader back to byte 1, over and over.
    expect(decoded(Buffer.from('\n-4:'), 1)).toBe('damaged');
    expect(decoded(Buffer.from('-0:\n'), 1)).toBe('damaged');
    expect(decoded(Buffer.from('2:é\n'), 1)).toEqual(['é']);
    expect(decoded(Buffer.from('3:ab\n\n'), 1)).toEqual(['ab\n']);
  });
});
