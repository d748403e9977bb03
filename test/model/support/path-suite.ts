/**
 * The path suite: every machine path driven on the real Agent, uninterrupted and with a
 * checkpoint + resume after every step, with a mid-path handoff for a fresh process.
 */
import { type ModelState, type Move, statusOf } from './alphabet.js';
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

/** A state's name in the edge counts: the status, or `running.<substate>`. */
const nameOf = (value: unknown): string =>
  typeof value === 'string' ? value : `running.${(value as { running: string }).running}`;

/** The name a move has in the coverage counts. */
export function coverName(m: Move): string {
  switch (m.kind) {
    case 'policy':
      return m.spec.kind === 'call' || m.spec.kind === 'calls'
        ? `policy:${m.spec.kind}(${m.spec.calls.map((c) => `${c.tool}#${c.variant}`).join(',')})`
        : `policy:${m.spec.kind}`;
    case 'tool':
      return `tool:${m.spec.kind}`;
    case 'decide':
      return `decide:${m.name ?? '?'}`;
    case 'crash':
      return m.afterMs === undefined ? 'crash' : 'crash(after)';
    case 'expire':
      return m.first ? 'expire(first)' : 'expire';
    default:
      return m.kind;
  }
}

/** The kind of event a move sends, for the edge counts. */
function eventClass(m: Move): string {
  if (m.kind === 'policy') return m.spec.kind === 'call' || m.spec.kind === 'calls' ? 'calls' : `policy:${m.spec.kind}`;
  if (m.kind === 'approve' || m.kind === 'deny' || m.kind === 'approveLate' || m.kind === 'decide') return 'DECIDE';
  if (m.kind === 'expire') return 'EXPIRE';
  return m.kind;
}

/**
 * Which statuses, moves and edges a set of paths covers: so a shrinking alphabet cannot go unseen.
 * An edge is `<event> <from> → <to>`: the transient `dispatching` state shows as where it led
 * (a call in flight, a human asked, the step ended and the policy asked or a budget stopping).
 */
export function coverage(paths: MachinePath[]): {
  statuses: Set<string>;
  moves: Map<string, number>;
  edges: Set<string>;
} {
  const statuses = new Set<string>();
  const moves = new Map<string, number>();
  const edges = new Set<string>();
  for (const p of paths) {
    let from = 'idle';
    for (const [i, s] of p.states.entries()) {
      const move = p.moves[i] as Move;
      statuses.add(JSON.stringify(s.value));
      moves.set(coverName(move), (moves.get(coverName(move)) ?? 0) + 1);
      edges.add(`${eventClass(move)} ${from} → ${nameOf(s.value)}`);
      from = nameOf(s.value);
    }
  }
  return { statuses, moves, edges };
}
