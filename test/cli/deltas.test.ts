/** The CLI's live view of a streaming model: pieces written as they arrive, hostile text escaped. */
import pc from 'picocolors';
import { describe, expect, it } from 'vitest';
import { LiveDeltas } from '../../src/cli/deltas.js';
import { entryLine, terminalSafe } from '../../src/cli/format.js';

const plain = pc.createColors(false);

function view() {
  const written: string[] = [];
  return { written, live: new LiveDeltas((text) => written.push(text), plain) };
}

describe('LiveDeltas', () => {
  it('writes each piece as it arrives, a line per text or call, ended before anything else prints', () => {
    const { written, live } = view();
    live.delta({ kind: 'text', text: 'Looking ' });
    expect(written.join('')).toBe('model     Looking ');
    live.delta({ kind: 'text', text: 'it up' });
    expect(live.open).toBe(true);
    live.delta({ kind: 'call', index: 0, id: 'c1', tool: 'lookup' });
    live.delta({ kind: 'call', index: 0, argsText: '{"id":' });
    live.delta({ kind: 'call', index: 0, argsText: '"inv-7"}' });
    live.delta({ kind: 'call', index: 1, tool: 'pay' });
    live.end();
    live.end();
    expect(live.open).toBe(false);
    expect(written.join('')).toBe(
      'model     Looking it up\nmodel     calls lookup {"id":"inv-7"}\nmodel     calls pay \n',
    );
  });

  it('writes reasoning on a line of its own, marked, and escaped like text', () => {
    const { written, live } = view();
    live.delta({ kind: 'reasoning', text: 'The order is ' });
    live.delta({ kind: 'reasoning', text: 'damaged\u001b[2J' });
    live.delta({ kind: 'text', text: 'Refunding.' });
    live.end();
    expect(written.join('')).toBe('model     thinks The order is damaged\\u001b[2J\nmodel     Refunding.\n');
  });

  it('escapes what a terminal would act on, and indents the lines of a multi-line text', () => {
    expect(terminalSafe('a\u001b[2Jb\rc\u0007d')).toBe('a\\u001b[2Jb\\u000dc\\u0007d');
    expect(terminalSafe('safe\u202eevil')).toBe('safe\\u202eevil');
    expect(terminalSafe('one\ntwo\tthree')).toBe('one\n          two\tthree');
    expect(terminalSafe('lone \uD800')).toBe('lone \uFFFD');
    expect(terminalSafe(42)).toBe('');
    const { written, live } = view();
    live.delta({ kind: 'call', index: 0, tool: 'x\u001b]0;pwned\u0007', argsText: 5 as never });
    expect(written.join('')).toBe('model     calls x\\u001b]0;pwned\\u0007 ');
  });

  it('history entries are escaped too: a final answer or a tool error cannot drive the terminal', () => {
    expect(entryLine({ role: 'assistant', final: 'ok\u001b[2J\u001b]0;title\u0007' }, plain)).toBe(
      'answer    ok\\u001b[2J\\u001b]0;title\\u0007',
    );
    expect(entryLine({ role: 'tool', tool: 'look', error: 'Error: \u202eevil' }, plain)).toBe(
      'error     look: Error: \\u202eevil',
    );
    expect(entryLine({ role: 'tool', tool: 'x\u001b[31m', error: 'unknown tool x\u001b[31m' }, plain)).toBe(
      'error     x\\u001b[31m: unknown tool x\\u001b[31m',
    );
    expect(entryLine({ role: 'assistant', final: 'two\nlines' }, plain)).toBe('answer    two\n          lines');
    // A summary (compaction) says which entries it stands for; its text is escaped as any other.
    expect(entryLine({ role: 'summary', text: 'sum\u001b[2J', covers: { from: 1, to: 6 } }, plain)).toBe(
      'summary   (entries 1–6) sum\\u001b[2J',
    );
  });

  it('an approver’s edit is on the result line: the arguments the call ran with', () => {
    const approval = { approved: true, by: 'ana', note: '', at: '2026-12-01T00:00:00.000Z', callId: 'r:2#1@x' };
    const refunded = { role: 'tool', tool: 'refund', result: { refunded: 60 } } as const;
    expect(entryLine({ ...refunded, approval: { ...approval, args: { amount: 60 } } }, plain)).toBe(
      'result    refund {"refunded":60} (approved by ana, arguments edited to {"amount":60})',
    );
    expect(entryLine({ ...refunded, approval }, plain)).toBe('result    refund {"refunded":60} (approved by ana)');
    // Edited arguments are the approver's input: escaped as any other text.
    expect(entryLine({ ...refunded, approval: { ...approval, args: { note: '\u001b[2J' } } }, plain)).toContain(
      'arguments edited to {"note":"\\u001b[2J"}',
    );
  });
});
