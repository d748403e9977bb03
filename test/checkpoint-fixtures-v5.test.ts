/**
 * The frozen version-5 checkpoints (test/fixtures/checkpoints/v5, made by make.ts.txt there):
 * conversations. Each round-trips exactly, loads from a store in the journal form, and goes on: a
 * run that answered takes the next message, a turn stopped by its limit goes on with a new one, a
 * turn's policy call in flight is asked again.
 */
import { readdirSync, readFileSync } from 'node:fs';
import canonicalize from 'canonicalize';
import { describe, expect, it } from 'vitest';
import { decodeCheckpoint, entryOf, headOf, joinRun } from '../src/checkpoint/index.js';
import { Agent, type HistoryEntry, type Policy } from '../src/index.js';
import { MemoryStore } from '../src/stores/memory.js';
import { ManualClock } from '../src/testing/index.js';

const V5 = 'test/fixtures/checkpoints/v5';
const T0 = Date.parse('2026-12-01T09:00:00.000Z');
const names = readdirSync(V5)
  .filter((f) => f.endsWith('.json'))
  .map((f) => f.slice(0, -'.json'.length))
  .sort();
const read = (name: string) => readFileSync(`${V5}/${name}.json`, 'utf8');
const price = { 'gpt-4.1': { inputUsdPerMTok: 2, cachedInputUsdPerMTok: 0.5, outputUsdPerMTok: 8 } };
const usage = { inputTokens: 1000, outputTokens: 100, model: 'gpt-4.1' };

/** The fixtures' world (make.ts.txt): each message's order looked up, refunded when asked, answered. */
function world() {
  const made: string[] = [];
  const asked: HistoryEntry[][] = [];
  const policy: Policy = (history) => {
    asked.push(history);
    let at = history.length - 1;
    while (history[at]?.role !== 'user') at--;
    const message = (history[at] as { content: string }).content;
    const id = /A-\d+/.exec(message)?.[0] ?? 'A-0';
    const since = history.slice(at + 1);
    if (since.length === 0) return { tool: 'lookup', args: { id }, usage };
    if (message.startsWith('refund') && !since.some((e) => 'tool' in e && e.tool === 'refund'))
      return { tool: 'refund', args: { cents: 5000 }, usage };
    return { final: `${id}: done`, usage };
  };
  const tools = [
    { name: 'lookup', fn: ({ id }: any) => (made.push(`lookup ${id}`), { id, total: 120 }) },
    { name: 'refund', sideEffect: true, fn: (a: any) => (made.push(`refund ${a.cents}`), { refunded: a.cents }) },
  ];
  return { made, asked, options: { policy, tools, clock: new ManualClock(T0), price } };
}

describe('every version-5 fixture', () => {
  it('is there: a conversation answered, waiting in a later turn, stopped by a turn limit, mid-call in a later turn', () => {
    expect(names).toEqual([
      'awaiting-approval-second-turn',
      'budget-exhausted-turn',
      'done-first-turn',
      'done-second-turn',
      'running-deciding-second-turn',
    ]);
  });

  for (const name of names) {
    describe(name, () => {
      it('is canonical version 5 and round-trips exactly', () => {
        const blob = read(name);
        const c = JSON.parse(blob);
        expect(c.version).toBe(5);
        expect(canonicalize(c)).toBe(blob);
        const agent = Agent.resume(blob, world().options);
        expect(agent.checkpoint()).toBe(blob);
        expect(Agent.resume(agent.checkpoint(), world().options).checkpoint()).toBe(blob);
      });

      it('loads from a store in the journal form, with the same head', async () => {
        const blob = read(name);
        const run = decodeCheckpoint(blob);
        const head = headOf(run);
        const entries = run.context.history.map(entryOf);
        expect(joinRun(head, entries)).toBe(blob);
        const store = new MemoryStore();
        const { pendingCalls } = Agent.resume(blob, world().options).state;
        await store.save('fx-5', { status: 'idle', head, from: 0, append: entries, pendingCalls }, 0);
        const agent = await Agent.load(store, 'fx-5', world().options);
        expect(agent.checkpoint()).toBe(blob);
      });
    });
  }
});

describe('a version-5 run goes on', () => {
  it('done-first-turn: the next message is a new turn; its refund waits for a human', async () => {
    const w = world();
    const agent = Agent.resume(read('done-first-turn'), w.options);
    expect(agent.state.turn).toMatchObject({ number: 1, steps: 2 });
    expect(await agent.send('refund order A-2')).toBe('awaiting_approval');
    expect(agent.state.pending).toMatchObject({ key: 'fx-5:4', tool: 'refund' });
    expect(w.made).toEqual(['lookup A-2']);
  });

  it('awaiting-approval-second-turn: approved, the refund runs once and the turn is answered', async () => {
    const w = world();
    const agent = Agent.resume(read('awaiting-approval-second-turn'), w.options);
    expect(await agent.decide(true, 'ok', { by: 'alice' })).toBe('done');
    expect(w.made).toEqual(['refund 5000']);
    expect(agent.checkpoint()).toBe(read('done-second-turn'));
  });

  it('budget-exhausted-turn: run() does not lift the turn limit; the next message goes on', async () => {
    const w = world();
    const agent = Agent.resume(read('budget-exhausted-turn'), w.options);
    expect(agent.state).toMatchObject({ stoppedBy: 'turn', limits: { perTurn: { maxSteps: 1, maxCostUsd: 0.5 } } });
    expect(await agent.run()).toBe('budget_exhausted');
    expect(w.asked).toEqual([]);
    expect(await agent.send('look up order A-6')).toBe('budget_exhausted');
    expect(w.made).toEqual(['lookup A-6']);
    expect(agent.state).toMatchObject({ stoppedBy: 'turn', steps: 2, turn: { number: 2, steps: 1 } });
  });

  it('running-deciding-second-turn: the turn’s policy call is asked again, the message in its view', async () => {
    const w = world();
    const agent = Agent.resume(read('running-deciding-second-turn'), w.options);
    expect(await agent.run()).toBe('done');
    expect(w.asked[0]?.at(-1)).toEqual({ role: 'user', content: 'look up order A-5' });
    expect(w.made).toEqual(['lookup A-5']);
    expect(agent.state.answer).toBe('A-5: done');
  });
});
