/**
 * Drives the real Agent along a machine path, checking after every step that its persisted
 * state equals the path's state (value and whole context) and that the invariants hold.
 */
import { isDeepStrictEqual } from 'node:util';
import { describeMove, isExecuting, type ModelState, type Move, TTL_MS } from './alphabet.js';
import { checkWorld } from './invariants.js';
import type { LedgerData } from './ledger.js';
import { runningOf } from './model-events.js';
import { before, checkMove } from './oracle.js';
import { PATH_LIMITS, type PathStep } from './paths.js';
import { asksAgainAfterCrash } from './tools.js';
import { type ResumeFn, World, type WorldOptions } from './world.js';

export const PATH_WORLD: WorldOptions = {
  limits: PATH_LIMITS,
  approvalTtlMs: TTL_MS,
  policyRetries: 0,
  retryDelayMs: 0,
};

export interface PathRun {
  violations: string[];
  /** The final persisted state, canonical enough to compare (value + context). */
  final: ModelState | null;
  /** Checkpoints resumed along the way. */
  resumes: number;
  /** A mid-path checkpoint and what a fresh process needs to continue from it. */
  handoff: Handoff | null;
}

/** Everything a fresh process needs to continue a path from a checkpoint. */
export interface Handoff {
  pathId: string;
  blob: string;
  now: number;
  ledger: LedgerData;
  moves: Move[];
}

export interface DriveOptions {
  /** Checkpoint and resume (fresh instances) after every step. */
  checkpointEveryStep?: boolean;
  resume?: ResumeFn;
  /** Take a handoff checkpoint after this many moves. */
  handoffAt?: number;
}

function diff(actual: ModelState, expected: ModelState): string {
  if (!isDeepStrictEqual(actual.value, expected.value)) {
    return `state ${JSON.stringify(actual.value)}, the machine says ${JSON.stringify(expected.value)}`;
  }
  const a = actual.context as unknown as Record<string, unknown>;
  const e = expected.context as unknown as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(a), ...Object.keys(e)])].filter((k) => !isDeepStrictEqual(a[k], e[k]));
  return keys.map((k) => `${k}: ${JSON.stringify(a[k])} ≠ machine ${JSON.stringify(e[k])}`).join('; ');
}

/**
 * Whether a crash here would change the path: a non-idempotent side effect in flight is not
 * called again after a resume (the write-ahead rule), so the run goes back to a human.
 */
export function crashChangesCourse(s: ModelState): boolean {
  const running = runningOf(s.context);
  return isExecuting(s) && running !== undefined && asksAgainAfterCrash(running.tool);
}

/** Runs `moves` on `world`, comparing with `states` after each. */
async function follow(
  world: World,
  moves: Move[],
  states: PathStep[] | null,
  options: DriveOptions,
  label: string,
  run: PathRun,
): Promise<void> {
  for (const [i, move] of moves.entries()) {
    const where = `${label} step ${i + 1} (${describeMove(move)})`;
    const was = before(world);
    try {
      await world.perform(move);
    } catch (error) {
      run.violations.push(`${where}: ${String(error)}`);
      return;
    }
    if (world.opError !== undefined)
      run.violations.push(`${where}: inv6: the operation threw ${String(world.opError)}`);
    const expected = states?.[i];
    if (expected) {
      const d = diff(world.snapshot() as unknown as ModelState, expected);
      if (d) run.violations.push(`${where}: ${d}`);
      if (world.clock.now() !== expected.now)
        run.violations.push(`${where}: test clock ${world.clock.now()}, the path says ${expected.now}`);
    }
    for (const v of checkMove(move, was, world)) run.violations.push(`${where}: ${v}`);
    for (const v of await checkWorld(world, i + 1 === moves.length))
      if (!run.violations.includes(`${where}: ${v}`)) run.violations.push(`${where}: ${v}`);
    world.ledger.data.violations.length = 0;
    if (run.violations.length > 0) return;
    if (options.handoffAt === i + 1 && i + 1 < moves.length) {
      run.handoff = {
        pathId: label,
        blob: world.agent.checkpoint(),
        now: world.clock.now(),
        ledger: structuredClone(world.ledger.data),
        moves: moves.slice(i + 1),
      };
    }
    if (options.checkpointEveryStep && i + 1 < moves.length && !(expected && crashChangesCourse(expected))) {
      world.crash();
      run.resumes++;
      await world.settle();
      const after = world.snapshot() as unknown as ModelState;
      if (expected) {
        const d = diff(after, expected);
        if (d) run.violations.push(`${where}, after checkpoint and resume: ${d}`);
      }
    }
  }
}

/** Drives one path from idle. */
export async function drivePath(
  path: { id: string; moves: Move[]; states: PathStep[] | null },
  options: DriveOptions = {},
): Promise<PathRun> {
  const world = new World({ ...PATH_WORLD, ...(options.resume ? { resume: options.resume } : {}) });
  const run: PathRun = { violations: [], final: null, resumes: 0, handoff: null };
  await follow(world, path.moves, path.states, options, path.id, run);
  run.final = world.snapshot() as unknown as ModelState;
  return run;
}

/** Continues a path from a handoff checkpoint (in whatever process this runs). */
export async function continueFrom(handoff: Handoff, resume?: ResumeFn): Promise<PathRun> {
  const world = new World({ ...PATH_WORLD, ...(resume ? { resume } : {}) }, handoff);
  const run: PathRun = { violations: [], final: null, resumes: 0, handoff: null };
  if (world.status === 'running') {
    // A fresh process picks a mid-call run up where it was: the call is made again.
    world.crash();
    await world.settle();
  }
  await follow(world, handoff.moves, null, {}, `${handoff.pathId} (fresh process)`, run);
  run.final = world.snapshot() as unknown as ModelState;
  return run;
}

export { diff as describeDifference };
