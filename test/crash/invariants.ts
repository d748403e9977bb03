/**
 * The crash test's invariants, checked against the store and the ledger once every run is
 * done. Each breach is one line in `report.violations`, naming the run, key and approval.
 */
import type { HistoryEntry } from '../../src/index.js';
import { joinRun } from '../../src/store/contract.js';
import type { World } from './ledger.js';
import { type CrashReport, type DecisionMessage, LIMITS, TOKENS_PER_CALL } from './scenario.js';

/** A decision the parent made, as it logged it. */
export interface LoggedDecision extends DecisionMessage {
  key: string;
  tool: string;
  attempt: number;
  outcome: 'unknown' | null;
  /** A child reported that `decide` returned for it (the call ran and its result is saved). */
  applied: boolean;
  /** When the parent decided (ms since the epoch, the parent's clock). */
  at: number;
}

/** A child's life, on the parent's clock. */
export interface Lifetime {
  from: number;
  /** When it exited; null if it had not (yet) when the decision was made. */
  to: number | null;
  /** When the parent sent it SIGKILL (its work ends there, before the exit is heard); null if never. */
  killedAt: number | null;
  killed: boolean;
}

/** When a child's work ended: its SIGKILL, else its exit; null while it lives. */
const endOf = (life: Lifetime): number | null => life.killedAt ?? life.to;

/** Whether the child was (or may have been) alive at `at`: unknown children count as alive. */
const aliveAt = (life: Lifetime | undefined, at: number): boolean => {
  const end = life ? endOf(life) : null;
  return life === undefined || end === null || end > at;
};

/** What the parent heard from its children, by pid. */
export interface Children {
  lives: Map<number, Lifetime>;
  /** The children that started each approved call of `pay`, by call id. */
  paying: Map<string, number[]>;
  /** Policy calls by run, then by child. */
  policyCalls: Map<string, Map<number, number>>;
  /**
   * Runs on which a live child lost its lease to a stall and was told so (`LeaseLostError`): the
   * overlap leases cannot rule out. The checks of two live owners note these runs rather than fail.
   */
  lostRuns?: ReadonlySet<string>;
  /** A run per save refused with a ConflictError (`conflict` events). */
  conflictRuns?: readonly string[];
}

export async function checkInvariants(
  world: World,
  runIds: string[],
  log: Map<string, LoggedDecision>,
  children: Children,
  report: CrashReport,
) {
  const { lives, paying, policyCalls } = children;
  const lostRuns = children.lostRuns ?? new Set<string>();
  report.conflicts = (children.conflictRuns ?? []).length;
  const v = report.violations;
  const approved = new Map([...log.values()].filter((d) => d.approved).map((d) => [d.callId, d]));
  const pay = await world.payRows();
  const ship = await world.shipRows();
  report.payRows = pay.length;
  report.shipRows = ship.length;
  report.shipRepeats = ship.reduce((n, r) => n + r.calls - 1, 0);

  // No side effect without approval: every ledger row names an approval the human gave for that key.
  for (const row of [...pay, ...ship]) {
    const d = row.call_id === null ? undefined : approved.get(row.call_id);
    if (!d || d.key !== row.key || d.runId !== row.run_id) {
      v.push(`effect without approval: key ${row.key} (run ${row.run_id}) carried approval ${row.call_id}`);
    }
  }
  // A non-idempotent call runs at most once per approval, so at most as often as it was approved.
  const byCall = countBy(pay, (r) => r.call_id ?? '');
  for (const [callId, n] of byCall) if (n > 1) v.push(`pay ran ${n} times on one approval ${callId}`);
  const approvalsPerKey = countBy([...approved.values()], (d) => d.key);
  for (const [key, n] of countBy(pay, (r) => r.key)) {
    if (n > (approvalsPerKey.get(key) ?? 0)) {
      v.push(`pay ran ${n} times for key ${key} with ${approvalsPerKey.get(key) ?? 0} approvals`);
    }
  }
  // Within the rules, but worth knowing: keys paid twice, each time on an approval of its own.
  // If the later approval followed a ledger check that showed nothing, the earlier call's effect
  // landed after the check — a call still running in the other (live) child, or a statement the
  // server ran after its client was killed: the human who checked was misled by timing.
  for (const [key, n] of countBy(pay, (r) => r.key)) {
    if (n < 2) continue;
    report.payTwice++;
    let misled = false;
    for (const check of [...approved.values()].filter((d) => d.key === key && d.note === 'ledger: not paid')) {
      // Rows made on approvals given before the check: the check should have seen them.
      for (const row of pay.filter((r) => r.key === key && attemptOf(r.call_id) < check.attempt)) {
        misled = true;
        const life = lives.get(row.pid);
        const end = life ? endOf(life) : null;
        const who = !life
          ? 'an unknown process'
          : end === null || end > check.at
            ? 'a child still alive at the check'
            : `a child killed ${check.at - end} ms before the check`;
        report.notes.push(
          `${key}: paid on ${row.call_id} by ${who}; the human checked the ledger, saw nothing, approved ${check.callId}`,
        );
      }
    }
    if (misled) report.payTwiceAfterCheck++;
  }
  // One live owner per run: a call in flight is asked about again ("outcome unknown") only once
  // the process that made it is dead and its lease lapsed. A re-ask decided while a process that
  // started (or paid) that key on an earlier approval still lived means two live processes worked
  // the run at once: the re-asking one took over a lease that was not free. (That process was
  // alive when the run was taken over too: the takeover came before the question, the call
  // before both. A live child's lease lapses only if its event loop stalls for most of LEASE_MS.)
  for (const d of log.values()) {
    if (d.outcome !== 'unknown') continue;
    const earlier = [...approved.values()].filter((a) => a.key === d.key && a.attempt < d.attempt);
    const callers = new Map<number, string>();
    for (const a of earlier) for (const pid of paying.get(a.callId) ?? []) callers.set(pid, a.callId);
    for (const row of pay)
      if (row.key === d.key && attemptOf(row.call_id) < d.attempt) callers.set(row.pid, row.call_id);
    for (const [pid, callId] of callers) {
      if (!aliveAt(lives.get(pid), d.at)) continue;
      (lostRuns.has(d.runId) ? report.notes : v).push(
        `${d.key} asked again (${d.callId}, outcome unknown, ${d.approved ? 'approved' : 'denied'}) while pid ${pid}, which called pay on ${callId}, was alive`,
      );
    }
  }
  // A save lost to another writer of the same version: two live agents worked one run at once
  // (with leases the later one fails its claim, or its fenced save, and never gets that far).
  // A save refused on its version is safe (nothing of it is written, its agent stops), and with
  // leases it should not happen between two live children: each is noted with where it came from.
  // It is not a failure: Postgres showed 2 in 101 kills with no lease lost and no other check
  // failing, from a source not yet found (issue 17's closing note); the checks above catch two
  // live owners by what they do (a re-ask while the payer lives, policy calls past the budget).
  const lostSaves = (children.conflictRuns ?? []).filter((runId) => !lostRuns.has(runId)).length;
  if (lostSaves > 0) report.notes.push(`${lostSaves} saves refused on their version (ConflictError)`);
  if (report.conflicts > lostSaves) {
    report.notes.push(`${report.conflicts - lostSaves} conflicts on runs a stalled child lost its lease on`);
  }
  // Policy calls within the budget: a run's calls are its steps, plus at most one per killed
  // child that called for it (the answer it died before saving). Another call means a live
  // process asked the policy and its answer was thrown away: two owners at once.
  for (const [runId, byPid] of policyCalls) {
    const run = await world.store.load(runId);
    const steps = run ? (JSON.parse(joinRun(run.head, [], run.base)).snapshot.context.steps as number) : 0;
    let calls = 0;
    let killedCallers = 0;
    for (const [pid, n] of byPid) {
      calls += n;
      if (lives.get(pid)?.killed) killedCallers++;
    }
    report.policyCalls += calls;
    if (calls > steps + killedCallers) {
      (lostRuns.has(runId) ? report.notes : v).push(
        `run ${runId}: ${calls} policy calls for ${steps} steps with ${killedCallers} killed callers${lostRuns.has(runId) ? ' (a live child lost its lease on it to a stall)' : ''}`,
      );
    }
  }
  // No duplicate effect for the idempotent tool (the unique key holds; say so if it did not).
  for (const [key, n] of countBy(ship, (r) => r.key)) if (n > 1) v.push(`ship took effect ${n} times for ${key}`);
  // No approved call lost: every decision a child applied has its effect.
  for (const d of approved.values()) {
    if (!d.applied) continue;
    const found = d.tool === 'ship' ? ship.some((r) => r.key === d.key) : pay.some((r) => r.call_id === d.callId);
    if (!found) v.push(`approval ${d.callId} (${d.tool}) was applied but has no effect in the ledger`);
  }

  for (const runId of runIds) {
    const run = await world.store.load(runId);
    if (!run) {
      v.push(`run ${runId} is missing`);
      continue;
    }
    if (run.status !== 'done') v.push(`run ${runId} ended ${run.status}, not done`);
    else report.runsDone++;
    const context = JSON.parse(joinRun(run.head, [], run.base)).snapshot.context;
    const history = run.entries.map((e) => JSON.parse(e) as HistoryEntry);
    const turns = history.filter((e) => e.role === 'assistant').length;
    // Budgets never exceeded, and a step counted once however many crashes it saw.
    if (context.steps > LIMITS.maxSteps) v.push(`run ${runId}: ${context.steps} steps > ${LIMITS.maxSteps}`);
    if (context.steps !== turns) v.push(`run ${runId}: ${context.steps} steps for ${turns} policy answers`);
    const tokens = context.usage.inputTokens + context.usage.outputTokens;
    if (tokens > LIMITS.maxTokens) v.push(`run ${runId}: ${tokens} tokens > ${LIMITS.maxTokens}`);
    // Each answered call counted once, as it reported: a token counted twice across a crash shows.
    const reported = turns * (TOKENS_PER_CALL.inputTokens + TOKENS_PER_CALL.outputTokens);
    if (tokens !== reported) v.push(`run ${runId}: ${tokens} tokens for ${turns} answers of ${reported / turns}`);
    // Every approved call the run recorded as done has its effect in the ledger.
    for (const entry of history) {
      if (entry.role !== 'tool' || !('result' in entry) || !entry.approval?.approved) continue;
      const { callId } = entry.approval;
      const key = callId.split('#')[0];
      const found = entry.tool === 'ship' ? ship.some((r) => r.key === key) : pay.some((r) => r.call_id === callId);
      if (!found) v.push(`run ${runId}: ${entry.tool} ${callId} recorded as done but has no effect in the ledger`);
    }
    // The idempotent tool's effect exists exactly when the run says it was approved and done.
    const shipped = history.some((e) => e.role === 'tool' && e.tool === 'ship' && 'result' in e);
    const rows = ship.filter((r) => r.run_id === runId).length;
    if (run.status === 'done' && rows !== (shipped ? 1 : 0))
      v.push(`run ${runId}: ${rows} ship rows, shipped=${shipped}`);
  }
}

function countBy<T>(items: readonly T[], key: (item: T) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return counts;
}

/** The attempt number of a call id `<key>#<attempt>`. */
function attemptOf(callId: string): number {
  return Number(callId.slice(callId.lastIndexOf('#') + 1));
}
