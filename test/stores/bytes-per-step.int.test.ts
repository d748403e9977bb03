/**
 * What a step costs in bytes written, measured: a run of tool calls whose results are ~200
 * bytes, on each store. "Payload" is what the Agent hands the store (head + appended entries,
 * UTF-8); "written" is what the process passed to write(2) meanwhile (/proc/self/io `wchar`:
 * head files, journals, lock files, WAL pages; Linux only). docs/stores.md quotes these numbers.
 * The check: a step late in a long run costs what an early one did — O(new data), not O(history).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Agent, type CheckpointStore } from '../../src/index.js';
import { FileStore } from '../../src/stores/file.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { SqliteStore } from '../../src/stores/sqlite.js';

const root = mkdtempSync(join(tmpdir(), 'tollgate-bytes-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const hasProcIo = existsSync('/proc/self/io');
const written = () => (hasProcIo ? Number(/wchar: (\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))?.[1]) : 0);
const RESULT = 'r'.repeat(200);

interface Half {
  saves: number;
  head: number;
  appended: number;
  written: number;
}

/** Runs `steps` tool calls on `store`; returns the cost of the first and second halves of the run. */
async function measure(store: CheckpointStore, steps: number): Promise<[Half, Half, number]> {
  const halves: [Half, Half] = [
    { saves: 0, head: 0, appended: 0, written: 0 },
    { saves: 0, head: 0, appended: 0, written: 0 },
  ];
  let step = 0;
  let mark = 0;
  const save = store.save.bind(store);
  store.save = (runId, write, version, lease) => {
    const half = halves[step <= steps / 2 ? 0 : 1];
    half.saves++;
    half.head += Buffer.byteLength(write.head) + Buffer.byteLength(write.base ?? '');
    half.appended += write.append.reduce((n, e) => n + Buffer.byteLength(e), 0);
    return save(runId, write, version, lease);
  };
  const agent = new Agent({
    runId: 'measured',
    store,
    maxSteps: steps + 1,
    policy: () => {
      step++;
      if (step === Math.floor(steps / 2) + 1) {
        const now = written();
        halves[0].written = now - mark;
        mark = now;
      }
      return step <= steps ? { tool: 'fetch', args: { page: step } } : { final: 'read them all' };
    },
    tools: [{ name: 'fetch', fn: () => RESULT }],
  });
  mark = written();
  expect(await agent.start('read every page')).toBe('done');
  halves[1].written = written() - mark;
  const entryBytes = agent.state.history.reduce((n, e) => n + Buffer.byteLength(JSON.stringify(e)), 0);
  await store.close();
  return [...halves, entryBytes];
}

const perStep = (h: Half, steps: number) => ({
  saves: +(h.saves / steps).toFixed(2),
  head: Math.round(h.head / steps),
  appended: Math.round(h.appended / steps),
  payload: Math.round((h.head + h.appended) / steps),
  written: hasProcIo ? Math.round(h.written / steps) : null,
});

describe('bytes written per step', () => {
  const cases: [string, () => CheckpointStore, number][] = [
    ['memory', () => new MemoryStore(), 1000],
    ['file', () => new FileStore({ dir: join(root, 'file') }), 200],
    ['sqlite', () => SqliteStore.open(join(root, 'sqlite.db')), 200],
  ];
  for (const [name, make, steps] of cases) {
    it(`${name}: ${steps} steps with 200-byte tool results cost the same per step late as early`, async () => {
      const [first, second, entryBytes] = await measure(make(), steps);
      const early = perStep(first, steps / 2);
      const late = perStep(second, steps / 2);
      console.log(
        `${name} store, bytes per step, steps 1–${steps / 2}: ${JSON.stringify(early)}; steps ${steps / 2 + 1}–${steps}: ${JSON.stringify(late)}`,
      );
      // Each entry is written once, in the save after it appears: appended bytes ≈ the history's bytes.
      expect(first.appended + second.appended).toBeLessThanOrEqual(entryBytes);
      expect(first.appended + second.appended).toBeGreaterThan(entryBytes * 0.9);
      // The head does not grow with the history. A head delta (~25–40 B) holds what changed since
      // the base: the step count, and the active time when a save took a millisecond or more —
      // some bytes either way, never the history (a head that grew with it would add ~300 B a step).
      expect(late.head).toBeLessThan(Math.max(early.head * 1.1, early.head + 24));
      expect(late.payload).toBeLessThan(early.payload * 1.1);
      if (late.written !== null && early.written !== null && name !== 'memory') {
        expect(late.written).toBeLessThan(early.written * 1.5);
      }
    }, 60_000);
  }
});
