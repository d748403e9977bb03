/**
 * Issue 17's targets, each judged from one run's medians (ratios of contestants measured in the
 * same run, interleaved). A benchmark, not a timed test. The "missed" texts say what is in the
 * way from what this run measured (saves per step and head bytes per save are counted by the
 * store wrapper in contestants/tollgate.ts).
 */
import {
  BARE,
  FLOOR,
  FLOOR_LOG,
  FLOOR_PG,
  FLOOR_SQLITE,
  MACHINE,
  type Results,
  type Target,
  TOLLGATE,
} from './report.js';
import { fmt } from './stats.js';

const SQLITE = 'tollgate + SQLite';
const SQLITE_POINTS = 'tollgate + SQLite (durability points)';
const PG = 'tollgate + Postgres';
const PG_POINTS = 'tollgate + Postgres (durability points)';

const med = (r: Results, name: string, n: number) => r.steps.get(name)?.get(n)?.perStepUs?.median ?? null;
const list = (r: Results, f: (n: number) => string) =>
  r.sizes.map((n) => `${n.toLocaleString('en')}: ${f(n)}`).join(', ');

/** `name ÷ other` at every N (null where either is missing). */
function ratios(r: Results, name: string, other: string): (number | null)[] {
  return r.sizes.map((n) => {
    const a = med(r, name, n);
    const b = med(r, other, n);
    return a === null || b === null ? null : a / b;
  });
}
const known = <T>(xs: (T | null)[]) => xs.filter((x): x is T => x !== null);
const all = (xs: (number | null)[], limit: number) =>
  known(xs).length === 0 ? null : known(xs).every((x) => x <= limit);
const showRatio = (x: number | null) => (x === null ? 'n/a' : fmt.ratio(x));
const showUs = (x: number | null) => (x === null ? 'n/a' : fmt.us(x));

/** Saves per step and head bytes per save, as counted at N (the largest N measured, else any). */
function saves(
  r: Results,
  name: string,
): { n: number; savesPerStep: number; headBytesPerSave: number; entryBytesPerStep: number } | null {
  const byN = r.saves.get(name);
  if (!byN) return null;
  const n = [...r.sizes].reverse().find((s) => byN.has(s));
  const s = n === undefined ? undefined : byN.get(n);
  return n === undefined || !s ? null : { n, ...s };
}
const savesText = (r: Results, name: string) => {
  const s = saves(r, name);
  return s
    ? `${s.savesPerStep.toFixed(2)} saves per step, each with a head of ${fmt.bytes(s.headBytesPerSave)} (counted at ${s.n.toLocaleString('en')} steps)`
    : 'saves not counted';
};

function inMemory(r: Results): Target {
  const vsBare = ratios(r, TOLLGATE, BARE);
  const ours = known(r.sizes.map((n) => med(r, TOLLGATE, n)));
  const spread = ours.length > 1 ? Math.max(...ours) / Math.min(...ours) : null;
  const bare = known(r.sizes.map((n) => med(r, BARE, n)));
  const bareSpread = bare.length > 1 ? Math.max(...bare) / Math.min(...bare) : null;
  const extra = r.sizes.map((n) => {
    const a = med(r, TOLLGATE, n);
    const b = med(r, BARE, n);
    return a === null || b === null ? 'n/a' : fmt.us(a - b);
  });
  const met = all(vsBare, 1.4);
  const machineVsBare = ratios(r, MACHINE, BARE);
  const runtimeVsMachine = ratios(r, TOLLGATE, MACHINE);
  return {
    name: 'In memory: per-step cost ≤ 1.4 × the bare XState loop (two invokes) at every N, and largest ÷ smallest ≤ 1.3 over N',
    met: met === null || spread === null ? null : met && spread <= 1.3,
    figure: `${list(r, (n) => `${showUs(med(r, TOLLGATE, n))} vs ${showUs(med(r, BARE, n))} (${showRatio(vsBare[r.sizes.indexOf(n)] ?? null)})`)}; largest ÷ smallest ${spread === null ? 'n/a' : fmt.ratio(spread)}`,
    whenMissed:
      `Tollgate costs ${extra.join(', ')} per step more than the bare two-invoke loop at N = ${r.sizes.join(', ')}. ` +
      `The floor in the way is Tollgate's machine itself: driven by actors that only replay a real run's decisions and outcomes, it costs ${list(r, (n) => `${showUs(med(r, MACHINE, n))} (${showRatio(machineVsBare[r.sizes.indexOf(n)] ?? null)} the bare loop)`)}. ` +
      'A step of one call takes two microsteps there, as in the bare loop (deciding → executing → deciding; the budget rule is tried on entering deciding, and the dispatch loop is taken only by steps of several calls or calls that wait for a human), but each does more: the records a step keeps (usage, cost, call ids hashed from the canonical arguments, timestamps, write-ahead records) and the guards that choose among the ways out. ' +
      `The runtime's actors add ${list(r, (n) => showRatio(runtimeVsMachine[r.sizes.indexOf(n)] ?? null))} on top of that machine (classification, the policy's view, deadlines, spans, the saver's hooks). ` +
      `What grows with N: each policy call is handed a fresh array of the history (the contract: a history the policy kept never grows with the run), O(N) per step, an array V8 allocates in its large-object space from 16,384 entries (~8,190 steps) on: measured ad hoc, copying 16,300 entries in a loop costs ~8 µs, 16,400 ~580 µs. Compaction keeps the view short. The bare loop, which copies nothing, spreads ${bareSpread === null ? 'n/a' : fmt.ratio(bareSpread)} over N in this run.`,
  };
}

/**
 * What Tollgate would cost with a store that cost nothing of its own beyond the floor's commit:
 * its in-memory step plus the floor's step, ÷ the floor's step, at every N.
 */
function runtimePlusFloor(r: Results, floor: string): (number | null)[] {
  return r.sizes.map((n) => {
    const t = med(r, TOLLGATE, n);
    const f = med(r, floor, n);
    return t === null || f === null ? null : (t + f) / f;
  });
}

function sqlite(r: Results): Target {
  const full = ratios(r, SQLITE, FLOOR_SQLITE);
  const points = ratios(r, SQLITE_POINTS, FLOOR_SQLITE);
  const a = all(full, 1.6);
  const b = all(points, 1.0);
  const pointsCpu = r.sizes.map((n) => {
    const p = med(r, SQLITE_POINTS, n);
    const t = med(r, TOLLGATE, n);
    return p === null || t === null ? 'n/a' : fmt.us(p - t);
  });
  return {
    name: 'SQLite (synchronous=FULL, the default) ≤ 1.6 × the one-fsynced-commit-per-step floor ("floor + SQLite append"); with durability points ≤ 1.0 × it',
    met: a === null || b === null ? null : a && b,
    figure: `full: ${list(r, (n) => showRatio(full[r.sizes.indexOf(n)] ?? null))}; points: ${list(r, (n) => showRatio(points[r.sizes.indexOf(n)] ?? null))}`,
    whenMissed:
      `Full: ${savesText(r, SQLITE)}, each an fsynced commit like the floor's one per step, plus the runtime's own per-step cost (the "tollgate" row) and the head's encoding and delta (one run saves one step at a time, so batch commit, which shares a commit between runs, does not help here). ` +
      `Points: ${savesText(r, SQLITE_POINTS)}, relaxed (synchronous=NORMAL, no fsync) but for the last; its cost over Tollgate in memory is ${pointsCpu.join(', ')} per step at N = ${r.sizes.join(', ')}, the store's statements and the head's encoding (a delta against the run's base), so with no fsync to save it is bounded by the in-memory runtime plus that. ` +
      `The floor in the way: Tollgate's in-memory step ("tollgate") plus the floor's own commit, as if the store cost nothing more, is already ${list(r, (n) => showRatio(runtimePlusFloor(r, FLOOR_SQLITE)[r.sizes.indexOf(n)] ?? null))} the floor, and the in-memory step alone ${list(r, (n) => showRatio(ratios(r, TOLLGATE, FLOOR_SQLITE)[r.sizes.indexOf(n)] ?? null))} it.`,
  };
}

function postgres(r: Results): Target {
  const full = ratios(r, PG, FLOOR_PG);
  const points = ratios(r, PG_POINTS, FLOOR_PG);
  const abs = r.sizes.map((n) => med(r, PG, n));
  const a = all(abs, 1000);
  const b = all(full, 2.5);
  return {
    name: 'Postgres: ≤ 1.0 ms per step, and ≤ 2.5 × the one-commit-per-step floor ("floor + Postgres append")',
    met: a === null || b === null ? null : a && b,
    figure: `full: ${list(r, (n) => `${showUs(med(r, PG, n))} (${showRatio(full[r.sizes.indexOf(n)] ?? null)})`)}; points: ${list(r, (n) => `${showUs(med(r, PG_POINTS, n))} (${showRatio(points[r.sizes.indexOf(n)] ?? null)})`)}`,
    whenMissed:
      `${savesText(r, PG)}; a save is one statement (a named prepared statement: the run's head updated, its lease extended and the new entries inserted), one round trip and one commit, against the floor's one INSERT of the entries; each save's head a small delta against the run's base (batch commit shares a statement among runs, not among one run's steps, so it does not help here). ` +
      `The floor itself costs ${list(r, (n) => showUs(med(r, FLOOR_PG, n)))} per step here. ` +
      `The floor in the way: Tollgate's in-memory step ("tollgate") plus the floor's own statement, as if the store cost nothing more, is ${list(
        r,
        (n) => {
          const t = med(r, TOLLGATE, n);
          const f = med(r, FLOOR_PG, n);
          return t === null || f === null ? 'n/a' : `${fmt.us(t + f)} (${fmt.ratio((t + f) / f)})`;
        },
      )}.`,
  };
}

function bytes(r: Results): Target {
  const name = [SQLITE, 'tollgate + memory store'].find((s) => r.steps.has(s));
  const per = (c: string | undefined, n: number) => (c ? (r.steps.get(c)?.get(n)?.bytesPerStep ?? null) : null);
  const rs = r.sizes.map((n) => {
    const o = per(name, n);
    const f = per(FLOOR_LOG, n);
    return o === null || f === null ? null : o / f;
  });
  const s = name ? saves(r, name) : null;
  return {
    name: 'Bytes persisted per step ≤ 1.2 × the append-only floor at every N',
    met: all(rs, 1.2),
    figure: `${name ?? 'tollgate'}: ${list(r, (n) => {
      const o = per(name, n);
      const f = per(FLOOR_LOG, n);
      return o === null || f === null ? 'n/a' : `${fmt.bytes(o)} vs ${fmt.bytes(f)} (${fmt.ratio(o / f)})`;
    })}`,
    whenMissed: s
      ? `${s.savesPerStep.toFixed(2)} saves per step × ${fmt.bytes(s.headBytesPerSave)} of head (a delta, and now and then a base) = ${fmt.bytes(s.savesPerStep * s.headBytesPerSave)} of head per step, on top of ${fmt.bytes(s.entryBytesPerStep)} of entries (the floor writes ${fmt.bytes(per(FLOOR_LOG, s.n) ?? 0)} per step: the entries and a step number).`
      : 'a head delta every save, a base now and then.',
  };
}

function concurrent(r: Results): Target {
  const limits: [string, number][] = [
    [TOLLGATE, 800],
    [SQLITE, 1500],
    [PG, 1500],
  ];
  const got = limits.map(([name, limit]) => {
    const c = r.concurrent.get(name);
    return { name, limit, ms: c && !('error' in c) ? c.totalMs : null };
  });
  const ms = (name: string) => {
    const c = r.concurrent.get(name);
    return c && !('error' in c) ? fmt.ms(c.totalMs) : 'n/a';
  };
  const first = [...r.concurrent.values()].find((c) => !('error' in c)) as { runs: number; steps: number } | undefined;
  const shape = first ? `${first.runs.toLocaleString('en')} concurrent runs × ${first.steps} steps` : 'concurrent runs';
  return {
    name: `${shape}: ≤ 0.8 s in memory, ≤ 1.5 s with SQLite and with Postgres`,
    met: got.some((g) => g.ms === null) ? null : got.every((g) => (g.ms as number) <= g.limit),
    figure: got.map((g) => `${g.name}: ${g.ms === null ? 'n/a' : fmt.ms(g.ms)}`).join(', '),
    whenMissed:
      `The saves waiting in one event-loop turn share one fsynced commit on SQLite and one statement on Postgres (batch commit); on Postgres the claims and releases of leases made in one turn are batched the same way (SQLite makes each a transaction of its own). Tollgate without a store took ${ms(TOLLGATE)}: the stores' part is the rest. In the same run the floors doing one commit per step for the same ${shape} took ${ms(FLOOR_SQLITE)} (SQLite) and ${ms(FLOOR_PG)} (Postgres, one connection); with durability points, ${ms(SQLITE_POINTS)} (SQLite) and ${ms(PG_POINTS)} (Postgres). ` +
      `In memory the bare two-invoke XState loop took ${ms(BARE)}: most of Tollgate's time there is the per-step cost of the first target.`,
  };
}

function checkpoint(r: Results): Target {
  const ours = [...r.checkpoints].filter(([name]) => name === TOLLGATE || name.startsWith('tollgate + '));
  const over = ours.filter(([, c]) => c.save.median > 2 || c.load.median > 3);
  const reasons: string[] = [];
  for (const [name, c] of over) {
    const parts: string[] = [];
    if (c.save.median > 2) {
      parts.push(
        name === TOLLGATE
          ? `save ${fmt.ms(c.save.median)}: the first checkpoint() with no store writes the whole history as canonical JSON (a run keeps each entry's text once written, so a later checkpoint() writes only the new entries; with a store, the saves have written each entry as it came; taken right after the run, it also pays for collecting the garbage the run left)`
          : `save ${fmt.ms(c.save.median)}: the last save of the run (its head and final entry) and the store's commit`,
      );
    }
    if (c.load.median > 3) {
      parts.push(
        `load ${fmt.ms(c.load.median)}: reads the whole run (${fmt.bytes(c.bytes)}), checks every entry and restores the machine`,
      );
    }
    reasons.push(`${name}: ${parts.join('; ')}`);
  }
  const bare = r.checkpoints.get(FLOOR);
  const floorText = bare
    ? ` The floor in the way: the same history as one JSON text and back, with nothing checked, no canonical form and nothing restored (JSON.stringify and JSON.parse, the "floor" row), took ${fmt.ms(bare.save.median)} and ${fmt.ms(bare.load.median)} in this run.`
    : '';
  return {
    name: `Final checkpoint of a ${r.checkpointSteps.toLocaleString('en')}-step run: save ≤ 2 ms and load ≤ 3 ms, every store`,
    met: ours.length === 0 ? null : over.length === 0,
    figure: ours.map(([name, c]) => `${name}: ${fmt.ms(c.save.median)} / ${fmt.ms(c.load.median)}`).join(', '),
    whenMissed: `${reasons.join('. ')}.${floorText}`,
  };
}

export function targets(r: Results): Target[] {
  return [inMemory(r), sqlite(r), postgres(r), bytes(r), concurrent(r), checkpoint(r)];
}
