/** Big runs and awkward text: what a real history holds. */
import assert from 'node:assert/strict';
import { entries, pendingCall, withStore, write } from './fixtures.js';
import type { ConformanceCase } from './types.js';

/** Text a store must keep byte for byte: no normalisation, no trimming, no re-encoding. */
const AWKWARD = [
  'emoji 👩‍👩‍👧‍👦 🏳️‍🌈 👍🏽',
  'CJK 日本語 中文 한국어',
  'combining e\u0301 vs precomposed \u00e9',
  'line\u2028and paragraph\u2029separators',
  'right-to-left \u202eabc\u202c עברית العربية',
  'tabs\tquotes " \' backslash \\ and a newline\n',
  'zero-width\u200bjoiner\u200d and BOM \ufeff',
  ' leading and trailing spaces ',
];

/** Run ids a store must keep apart and give back as they were (file names, collations, case). */
const RUN_IDS = [
  'emoji-👩‍👩‍👧‍👦',
  '日本語の実行',
  'e\u0301',
  '\u00e9',
  'Run-Case',
  'run-case',
  'line\u2028sep',
  'slash/and\\back',
  '../../escape',
  '.',
  'CON',
  ' spaced ',
  `long-${'x'.repeat(300)}`,
  `long-${'x'.repeat(299)}y`,
];

export const scaleCases: ConformanceCase[] = [
  {
    name: 'large histories: 10,000 entries over many saves, a 1 MB entry and a 1 MB head',
    timeoutMs: 60_000,
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const all = entries(5_000);
        let version = await store.save('big', write({ append: all }), 0);
        for (let i = 0; i < 50; i++) {
          const more = entries(100, all.length);
          version = await store.save('big', write({ from: all.length, append: more }), version);
          all.push(...more);
        }
        const megabyte = JSON.stringify({ role: 'tool', tool: 'dump', result: '日本👍x'.repeat(1 << 17) });
        const bigHead = JSON.stringify({ format: 'conformance', padding: 'h'.repeat(1 << 20) });
        version = await store.save('big', write({ head: bigHead, from: all.length, append: [megabyte] }), version);
        all.push(megabyte);
        let run = await store.load('big');
        assert.equal(run?.version, 52);
        assert.equal(run?.entries.length, 10_001);
        assert.ok(
          run?.entries.every((e, i) => e === all[i]),
          'every entry comes back in order, exactly',
        );
        assert.equal(run?.head, bigHead);

        // The run goes on after the big ones.
        await store.save('big', write({ from: all.length, append: entries(1, 7) }), version);
        run = await store.load('big');
        assert.equal(run?.entries.length, 10_002);
        assert.equal(run?.entries[10_000], megabyte);
        assert.equal(run?.head, write().head);
      }),
  },
  {
    name: 'unicode round trip: emoji, CJK, combining marks, \\u2028, in run ids, heads, entries and pending calls',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const expected = new Map<string, { head: string; entries: string[] }>();
        for (const [i, runId] of RUN_IDS.entries()) {
          const head = JSON.stringify({ format: 'conformance', text: AWKWARD[i % AWKWARD.length] });
          const body = AWKWARD.map((text, j) => JSON.stringify({ role: 'tool', tool: `t${j}`, result: text }));
          // JSON.stringify escapes NUL and lone surrogates: entries hold them as ASCII escapes.
          body.push(JSON.stringify({ role: 'tool', tool: 'raw', result: 'nul \u0000 lone \ud800 end' }));
          const pending = pendingCall(runId, 1, { text: AWKWARD.join('|'), nul: 'a\u0000b', lone: 'x\udc00y' });
          await store.save(
            runId,
            write({ status: 'awaiting_approval', head, append: body, pendingCalls: [pending] }),
            0,
          );
          expected.set(runId, { head, entries: body });
        }
        for (const [runId, { head, entries: body }] of expected) {
          const run = await store.load(runId);
          assert.ok(run, `run ${JSON.stringify(runId)} comes back`);
          assert.equal(run.runId, runId);
          assert.equal(run.head, head);
          assert.deepEqual(run.entries, body);
          assert.deepEqual(
            run.pending,
            pendingCall(runId, 1, { text: AWKWARD.join('|'), nul: 'a\u0000b', lone: 'x\udc00y' }),
          );
        }
        const listed = await store.list({ status: 'awaiting_approval' });
        assert.deepEqual(listed.map((r) => r.runId).sort(), [...RUN_IDS].sort());
        assert.equal(await store.delete('e\u0301'), true);
        assert.equal((await store.load('\u00e9'))?.runId, '\u00e9', 'a combining sequence is not its precomposed twin');
        assert.equal((await store.load('Run-Case'))?.runId, 'Run-Case', 'run ids are case-sensitive');
      }),
  },
];
