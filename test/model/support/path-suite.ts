/**
 * The path suite: every machine path driven on the real Agent, uninterrupted and with a
 * checkpoint + resume after every step, with a mid-path handoff for a fresh process.
 */
import { type ModelState, statusOf } from './alphabet.js';
import { crashChangesCourse, describeDifference, drivePath, type Handoff } from './drive.js';
import { knownBug } from './known-bugs.js';
import type { MachinePath } from './paths.js';
import type { ResumeFn } from './world.js';

export interface PathFailure {
  path: string;
  moves: string;
  violations: string[];
}

export interface SuiteResult {
  runs: number;
  moves: number;
  resumes: number;
  failures: PathFailure[];
  /** Violations that are known runtime bugs (known-bugs.ts), by bug id. */
  known: Map<string, PathFailure[]>;
  finals: Map<string, ModelState>;
  handoffs: Handoff[];
}

function emptyResult(): SuiteResult {
  return { runs: 0, moves: 0, resumes: 0, failures: [], known: new Map(), finals: new Map(), handoffs: [] };
}

/** Files a path's violations: known bugs apart, everything else as a failure. */
export function file(
  result: SuiteResult,
  path: MachinePath | { id: string; moves: unknown[] },
  violations: string[],
): void {
  const unknown = violations.filter((v) => !knownBug(v));
  const moves = path.moves.map((m) => JSON.stringify(m)).join(' > ');
  if (unknown.length > 0) result.failures.push({ path: path.id, moves, violations: unknown });
  for (const v of violations) {
    const bug = knownBug(v);
    if (!bug) continue;
    const list = result.known.get(bug.id) ?? [];
    list.push({ path: path.id, moves, violations: [v] });
    result.known.set(bug.id, list);
  }
}

/** The step after which a fresh process takes over: the middle of those a crash cannot divert. */
function handoffStep(path: MachinePath): number | undefined {
  const ok = path.states
    .map((_, i) => i + 1)
    .filter((n) => n < path.moves.length && !crashChangesCourse(path.states[n - 1] as ModelState));
  return ok[Math.floor(ok.length / 2)];
}

export interface SuiteOptions {
  checkpointEveryStep?: boolean;
  resume?: ResumeFn;
  /** Stop at the first path with an unknown violation (tests of the tests). */
  stopAtFirst?: boolean;
  /** Compare each run's final state with these (the uninterrupted runs'). */
  expectFinals?: Map<string, ModelState>;
}

export async function runPaths(paths: MachinePath[], options: SuiteOptions = {}): Promise<SuiteResult> {
  const result = emptyResult();
  for (const path of paths) {
    const handoffAt = options.checkpointEveryStep ? undefined : handoffStep(path);
    const run = await drivePath(path, {
      ...(options.checkpointEveryStep ? { checkpointEveryStep: true } : {}),
      ...(options.resume ? { resume: options.resume } : {}),
      ...(handoffAt === undefined ? {} : { handoffAt }),
    });
    result.runs++;
    result.moves += path.moves.length;
    result.resumes += run.resumes;
    const violations = [...run.violations];
    const last = path.states.at(-1) as ModelState;
    // Invariant 4: pausing (at every step) ends where never pausing ends.
    const before = options.expectFinals?.get(path.id);
    if (run.final && before) {
      const d = describeDifference(run.final, before);
      if (d) violations.push(`inv4: final state differs from the uninterrupted run's: ${d}`);
    }
    if (run.final && statusOf(run.final.value) !== statusOf(last.value)) {
      violations.push(`final status ${statusOf(run.final.value)}, the path ends in ${statusOf(last.value)}`);
    }
    if (run.final) result.finals.set(path.id, run.final);
    if (run.handoff) result.handoffs.push(run.handoff);
    file(result, path, violations);
    if (options.stopAtFirst && result.failures.length > 0) break;
  }
  return result;
}

/** Which statuses and moves a set of paths covers: so a shrinking alphabet cannot go unseen. */
export function coverage(paths: MachinePath[]): { statuses: Set<string>; moves: Set<string> } {
  const statuses = new Set<string>();
  const moves = new Set<string>();
  for (const p of paths) {
    for (const s of p.states) statuses.add(JSON.stringify(s.value));
    for (const m of p.moves) moves.add(m.kind === 'policy' || m.kind === 'tool' ? `${m.kind}:${m.spec.kind}` : m.kind);
  }
  return { statuses, moves };
}
