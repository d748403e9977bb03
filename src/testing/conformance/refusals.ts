/** What every store refuses alike: run ids and texts no store can keep, options it does not know. */
import assert from 'node:assert/strict';
import { entries, optionsError, saveAll, withStore, write } from './fixtures.js';
import type { ConformanceCase } from './types.js';

/** Run ids no store can keep: UTF-8 has no form for a lone surrogate (it would come back as U+FFFD), Postgres text no NUL. */
const UNKEEPABLE = ['a\u0000b', '\u0000', 'lone\ud800', 'lone\udfff', '\udc00\ud800', 'trailing high half \ud83d'];

export const refusalCases: ConformanceCase[] = [
  {
    name: 'run ids no store can keep (NUL, lone surrogates) are refused alike by load, save and delete: OptionsError, nothing stored',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        await saveAll(store, 'kept', [{ append: entries(1) }]);
        for (const runId of UNKEEPABLE) {
          const shown = JSON.stringify(runId)
            .slice(1, -1)
            .replace(/[\\[\]()]/g, '\\$&');
          await assert.rejects(
            store.save(runId, write(), 0),
            optionsError(new RegExp(`^save: run id "${shown}" holds`)),
          );
          await assert.rejects(store.load(runId), optionsError(/^load: run id .* holds (a NUL|a lone surrogate)/));
          await assert.rejects(store.delete(runId), optionsError(/^delete: run id .* no store can keep it$/));
        }
        // A lone surrogate must not become U+FFFD and find, or overwrite, another run.
        await saveAll(store, 'lone\ufffd', [{ append: entries(2) }]);
        await assert.rejects(store.load('lone\ud800'), optionsError(/lone surrogate \(\\ud800\) at index 4/));
        assert.deepEqual((await store.list()).map((r) => r.runId).sort(), ['kept', 'lone\ufffd']);
        // Well-formed astral characters are fine.
        await saveAll(store, 'emoji 😀', [{ append: entries(1) }]);
        assert.equal((await store.load('emoji 😀'))?.runId, 'emoji 😀');
      }),
  },
  {
    name: 'a save whose head or entries hold a raw NUL or lone surrogate is refused (OptionsError), nothing stored',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        await saveAll(store, 'r', [{ append: entries(1) }]);
        const before = await store.load('r');
        await assert.rejects(
          store.save('r', write({ head: '{"a":"\u0000"}', from: 1 }), 1),
          optionsError(/write\.head holds a NUL/),
        );
        await assert.rejects(
          store.save('r', write({ from: 1, append: ['"ok"', '"\ud800"'] }), 1),
          optionsError(/write\.append\[1\] holds a lone surrogate/),
        );
        assert.deepEqual(await store.load('r'), before);
        // Escaped, as JSON.stringify writes them, they are ordinary text.
        const escaped = JSON.stringify({ nul: '\u0000', lone: '\ud800' });
        assert.equal(await store.save('r', write({ head: escaped, from: 1, append: [escaped] }), 1), 2);
        assert.equal((await store.load('r'))?.head, escaped);
      }),
  },
  {
    name: 'list options are strict: an unknown key or status is an OptionsError, never a silent full listing',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        await saveAll(store, 'a', [{ status: 'done' }]);
        await assert.rejects(
          store.list({ stauts: 'awaiting_approval' } as never),
          optionsError(/^list: unknown option "stauts" \(did you mean "status"\?\)$/),
        );
        await assert.rejects(
          store.list({ status: 'awaiting' } as never),
          optionsError(/^list: status must be one of .*awaiting_approval.*, got "awaiting"$/),
        );
        assert.deepEqual(
          (await store.list({})).map((r) => r.runId),
          ['a'],
        );
      }),
  },
];
