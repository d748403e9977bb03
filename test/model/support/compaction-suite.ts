/**
 * The compaction suites: the machine's paths through `summarising` (@xstate/graph), each driven on
 * the real Agent uninterrupted and with a crash after every move; and command sequences
 * (fast-check) that walk the run at random, crashing anywhere. Both check the Agent against the
 * pure machine and the invariants after every move (compaction-world.ts).
 */
import { getShortestPaths, getSimplePaths } from '@xstate/graph';
import fc from 'fast-check';
import type { Agent as AgentClass } from '../../../src/agent.js';
import { apply, CompactionWorld, initial, type Move, movesFor, oracleMachine } from './compaction-world.js';

type Machine = ReturnType<typeof oracleMachine>;
type Snapshot = ReturnType<typeof initial>;
interface PathState {
  snapshot: Snapshot;
}
type PathEvent = { type: string; move: Move };

const logic = (machine: Machine) => ({
  transition: (s: PathState, e: PathEvent): PathState => ({ snapshot: apply(machine, s.snapshot, e.move) }),
  getInitialSnapshot: (): PathState => ({ snapshot: initial(machine) }),
});

/**
 * What the guards see: the state, the counters against the limits (the exact tokens: two states
 * that differ in them may differ in what the next summary's tokens do), the journal's length,
 * compaction's record. A path's moves are replayed from the start, so they must fit every state
 * the key merges.
 */
function key(s: PathState): string {
  const c = s.snapshot.context;
  if (s.snapshot.value === 'done' || s.snapshot.value === 'cancelled') return JSON.stringify(s.snapshot.value);
  return JSON.stringify([
    s.snapshot.value,
    c.steps,
    c.limits,
    c.usage.inputTokens + c.usage.outputTokens,
    c.history.length,
    c.history.filter((e) => e.role === 'summary').length,
    c.compaction,
  ]);
}

const events = (s: PathState): PathEvent[] =>
  movesFor(s.snapshot).map((move) => ({ type: JSON.stringify(move), move }));

/**
 * The simple paths' smaller alphabet (their number grows fast with every move): each letter left
 * out here is taken by the shortest paths and the command sequences.
 */
const SIMPLE_LEFT_OUT = new Set(['throws', 'summaryBad', 'cancel', 'final']);
const simpleEvents = (s: PathState): PathEvent[] =>
  events(s).filter((e) => !SIMPLE_LEFT_OUT.has(e.move.kind) && !(e.move.kind === 'summary' && e.move.costly));

/** The machine's shortest and simple paths, as lists of moves (prefixes of longer ones dropped). */
export function compactionPaths(machine: Machine = oracleMachine()): { shortest: Move[][]; simple: Move[][] } {
  const asMoves = (paths: { steps: { event: unknown }[] }[]) =>
    paths
      .map((p) => p.steps.flatMap((step) => ('move' in (step.event as object) ? [(step.event as PathEvent).move] : [])))
      .filter((m) => m.length > 0);
  const options = { events, serializeState: key } as never;
  const shortest = asMoves(getShortestPaths(logic(machine) as never, options));
  const simple = asMoves(
    getSimplePaths(
      logic(machine) as never,
      { events: simpleEvents, serializeState: (s: PathState) => key(s) } as never,
    ),
  );
  return { shortest: maximal(shortest), simple: maximal(simple) };
}

function maximal(paths: Move[][]): Move[][] {
  const keyed = paths.map((p) => p.map((m) => JSON.stringify(m)).join('\n')).sort();
  return [...new Set(keyed)]
    .filter((k, i, all) => !(all[i + 1]?.startsWith(`${k}\n`) ?? false))
    .map((k) => k.split('\n').map((m) => JSON.parse(m) as Move));
}

/** Drives one path on the Agent (a crash after every move if `crashing`); returns what was wrong. */
export async function drivePath(
  Agent: typeof AgentClass,
  moves: Move[],
  crashing: boolean,
  machine: Machine = oracleMachine(),
): Promise<string[]> {
  const world = new CompactionWorld(Agent);
  let model = initial(machine);
  try {
    for (const [i, move] of moves.entries()) {
      if (!movesFor(model).some((m) => JSON.stringify(m) === JSON.stringify(move))) {
        world.violations.push(
          `move ${i + 1} ${JSON.stringify(move)} is not one the machine offers in ${JSON.stringify(model.value)}`,
        );
        break;
      }
      await world.move(move);
      model = apply(machine, model, move);
      world.check(model, `move ${i + 1} ${JSON.stringify(move)}`);
      if (crashing) {
        await world.crash();
        world.check(model, `crash after move ${i + 1}`);
      }
      if (world.violations.length > 0) break;
    }
  } catch (error) {
    world.violations.push(`the Agent failed: ${String(error)}`);
  } finally {
    await world.dispose();
  }
  return world.violations;
}

/** One command: the `choice`-th move the state offers, or a crash. */
class Step implements fc.AsyncCommand<{ model: Snapshot; machine: Machine }, CompactionWorld> {
  constructor(
    readonly choice: number,
    readonly crash: boolean,
  ) {}
  check(): boolean {
    return true;
  }
  async run(m: { model: Snapshot; machine: Machine }, world: CompactionWorld): Promise<void> {
    if (this.crash) {
      await world.crash();
      world.check(m.model, this.toString());
    } else {
      const moves = movesFor(m.model);
      const move = moves[this.choice % Math.max(1, moves.length)];
      if (!move) return;
      await world.move(move);
      m.model = apply(m.machine, m.model, move);
      world.check(m.model, `${this.toString()} = ${JSON.stringify(move)}`);
    }
    if (world.violations.length > 0) throw new Error(world.violations.join(' / '));
  }
  toString(): string {
    return this.crash ? 'crash' : `move(${this.choice})`;
  }
}

export const stepCommands = [fc.nat(12).map((n) => new Step(n, false)), fc.constant(new Step(0, true))];

/** Runs command sequences (seeded); returns the failure, or null. */
export async function runCommands(
  Agent: typeof AgentClass,
  seed: number,
  numRuns: number,
  machine: Machine = oracleMachine(),
): Promise<string | null> {
  const details = await fc.check(
    fc.asyncProperty(fc.commands(stepCommands, { size: 'max', maxCommands: 40 }), async (cmds) => {
      const world = new CompactionWorld(Agent);
      try {
        await fc.asyncModelRun(() => ({ model: { model: initial(machine), machine }, real: world }), cmds);
      } finally {
        await world.dispose();
      }
    }),
    { seed, numRuns, endOnFailure: true },
  );
  return details.failed ? `seed ${seed}, path ${details.counterexamplePath}: ${String(details.errorInstance)}` : null;
}
