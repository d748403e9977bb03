/**
 * The chaos suite's checks, once every run rests: against the downstream system's record of every
 * attempt, the store's runs and group spending, the approver's decisions and the parent's record
 * of faults — never the workers' word. Each breach is a line in `report.violations`.
 */
import type { HistoryEntry, Limits } from '../../machines/types.js';
import { joinRun } from '../../src/store/contract.js';
import type { ChaosStore } from './child.js';
import type { AttemptRow, Downstream } from './downstream.js';
import type { ChaosReport } from './report.js';
import type { ApproverEvent, WorkerEvent } from './scenario.js';

export interface Submitted {
  runId: string;
  group: string;
  /** The run's own limits, when the suite set some for it to reach. */
  limits: Partial<Limits> | null;
}

/** A fault the parent made, on its clock: an instant (`kill`, `cut`) or a span (`to` null until it ended). */
export interface Fault {
  kind: 'kill' | 'pause' | 'cut' | 'partition';
  from: number;
  to: number | null;
}

export type Decided = Extract<ApproverEvent, { type: 'decided' }>;

/** What the parent heard from its children and did to them. */
export interface Observed {
  decisions: Decided[];
  /** Call ids the approver found pending again after recording a decision on them. */
  dropped: string[];
  /** By worker pid. */
  faults: Map<number, Fault[]>;
  workerErrors: string[];
  verify: ('done' | 'notDone')[];
  /** What the workers told of their claims and group holds and charges, with lease tokens. */
  leases: Extract<WorkerEvent, { type: 'lease' }>[];
  holds: Extract<WorkerEvent, { type: 'hold' }>[];
  charges: Extract<WorkerEvent, { type: 'charge' }>[];
}

interface Input {
  store: ChaosStore;
  downstream: Downstream;
  submitted: Submitted[];
  /** Each group's cost limit in dollars. */
  limits: Record<string, number>;
  observed: Observed;
  report: ChaosReport;
  leaseMs: number;
}

const NON_IDEMPOTENT = new Set(['pay', 'notify']);
const micro = (usd: number) => Math.round(usd * 1e6);
const keyOf = (callId: string) => callId.slice(0, callId.lastIndexOf('#'));
const attemptOf = (callId: string) => Number(callId.slice(callId.lastIndexOf('#') + 1).split('@')[0]);
const same = (a: unknown, b: unknown) => JSON.stringify(sorted(a)) === JSON.stringify(sorted(b));
const sorted = (value: unknown): unknown =>
  value && typeof value === 'object' && !Array.isArray(value)
    ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => a.localeCompare(b)))
    : value;

function countBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
}

export async function checkChaos(input: Input): Promise<void> {
  const { report, observed } = input;
  const rows = await input.downstream.rows();
  checkAttempts(rows, input);
  const histories = await checkRuns(rows, input);
  checkDecisions(histories, input);
  await checkGroups(histories, input);
  for (const answer of observed.verify) report.verify[answer]++;
  for (const error of observed.workerErrors) {
    const name = error.split(':')[0] ?? error;
    report.workerErrors[name] = (report.workerErrors[name] ?? 0) + 1;
  }
}

/** Every attempt on an approval of that call, with its arguments; at most one effect per approval; refusals explained. */
function checkAttempts(rows: AttemptRow[], { observed, report }: Input): void {
  const v = report.violations;
  const approved = new Map(observed.decisions.filter((d) => d.approve).map((d) => [d.callId, d]));
  for (const row of rows) {
    report.attempts[row.tool as 'pay' | 'ship' | 'notify']++;
    report.attempts[row.accepted ? 'accepted' : 'refused']++;
    const d = row.callId === null ? undefined : approved.get(row.callId);
    if (!d || d.key !== row.key || d.tool !== row.tool) {
      v.push(`${row.tool} ${row.key} was attempted (pid ${row.pid}) on ${row.callId}, which approved no such call`);
    } else if (!same(d.args, row.args)) {
      v.push(
        `${row.tool} ${row.key} ran with ${JSON.stringify(row.args)}; ${d.callId} approved ${JSON.stringify(d.args)}`,
      );
    }
    if (row.fence === null) v.push(`${row.tool} ${row.key} was given no fencing token`);
  }
  for (const [callId, attempts] of countBy(
    rows.filter((r) => NON_IDEMPOTENT.has(r.tool)),
    (r) => r.callId ?? '',
  )) {
    const accepted = attempts.filter((r) => r.accepted);
    if (accepted.length > 1) {
      v.push(`${callId} took effect ${accepted.length} times on one approval (pids ${accepted.map((r) => r.pid)})`);
    }
    if (attempts.length > 1) report.retriedOnOneApproval++;
  }
  for (const [key, attempts] of countBy(
    rows.filter((r) => r.accepted),
    (r) => r.key,
  )) {
    if (attempts[0]?.tool === 'ship') report.shipRepeats += attempts.length - 1;
    else if (attempts.length > 1) {
      report.twice++;
      report.notes.push(`${key} took effect ${attempts.length} times, on ${attempts.map((r) => r.callId).join(', ')}`);
    }
  }
  // A refused attempt is an owner that lost the run acting late: its call must have been in flight
  // across a fault of its process — started before the fault ended (a pause's end is taken before
  // its SIGCONT), sent after it began. One that started after its process woke from a pause, with
  // no fault since, is an effect started from a stale lease: what the fence check must prevent.
  for (const row of rows.filter((r) => !r.accepted)) {
    const faults = observed.faults.get(row.pid) ?? [];
    const across = faults.find((f) => f.kind !== 'kill' && f.from <= row.sentAt && row.startedAt < (f.to ?? Infinity));
    if (across?.kind === 'pause') report.refusals.acrossPause++;
    else if (across?.kind === 'partition') report.refusals.acrossPartition++;
    else if (across?.kind === 'cut') report.refusals.acrossCut++;
    else {
      report.refusals.noFault++;
      const woke = faults.filter((f) => f.kind === 'pause' && f.to !== null && f.to <= row.startedAt).pop();
      const what = `${row.tool} ${row.key} (pid ${row.pid}, token ${row.fence}) was refused downstream`;
      if (woke?.to) v.push(`${what}: it started ${row.startedAt - woke.to} ms after its process woke from a pause`);
      else report.notes.push(`${what} with no fault of its process during the call (a stall of the machine?)`);
    }
  }
}

interface RunRecord {
  history: HistoryEntry[];
  pendingKeys: Map<string, number>;
  costUsd: number;
  group: string;
}

/** Every run final as the suite meant it; budgets kept; each effect recorded as done happened once. */
async function checkRuns(rows: AttemptRow[], { store, submitted, report }: Input): Promise<Map<string, RunRecord>> {
  const v = report.violations;
  const accepted = countBy(
    rows.filter((r) => r.accepted),
    (r) => r.callId ?? '',
  );
  const records = new Map<string, RunRecord>();
  for (const s of submitted) {
    const run = await store.load(s.runId);
    if (!run) {
      v.push(`${s.runId} is missing`);
      continue;
    }
    report.runs++;
    report.statuses[run.status] = (report.statuses[run.status] ?? 0) + 1;
    const context = JSON.parse(joinRun(run.head, [], run.base)).snapshot.context;
    const history = run.entries.map((e) => JSON.parse(e) as HistoryEntry);
    records.set(s.runId, {
      history,
      pendingKeys: new Map(run.pendingCalls.map((p) => [p.key, p.attempt])),
      costUsd: context.usage.costUsd,
      group: s.group,
    });
    const stoppedBy: string | null = context.stoppedBy;
    if (run.status === 'budget_exhausted') {
      report.stoppedBy[String(stoppedBy)] = (report.stoppedBy[String(stoppedBy)] ?? 0) + 1;
      const meant =
        (stoppedBy === 'group' && s.group === 'acme') ||
        (stoppedBy === 'steps' && s.limits?.maxSteps !== undefined) ||
        (stoppedBy === 'cost' && s.limits?.maxCostUsd !== undefined);
      if (!meant)
        v.push(`${s.runId} (${s.group}) stopped by ${stoppedBy}, a budget the suite did not set to be reached`);
    } else if (run.status !== 'done') {
      v.push(`${s.runId} ended ${run.status}: ${context.error ?? context.cancelReason}`);
    }
    if (run.decision !== null) v.push(`${s.runId} still holds a decision: ${JSON.stringify(run.decision)}`);
    const limits: Limits = context.limits;
    const tokens = context.usage.inputTokens + context.usage.outputTokens;
    const turns = history.filter((e) => e.role === 'assistant').length;
    if (context.steps > limits.maxSteps) v.push(`${s.runId}: ${context.steps} steps > ${limits.maxSteps}`);
    if (context.steps !== turns) v.push(`${s.runId}: ${context.steps} steps for ${turns} policy answers`);
    if (limits.maxTokens !== null && tokens > limits.maxTokens)
      v.push(`${s.runId}: ${tokens} tokens > ${limits.maxTokens}`);
    if (limits.maxCostUsd !== null && micro(context.usage.costUsd) > micro(limits.maxCostUsd)) {
      v.push(`${s.runId}: $${context.usage.costUsd} > $${limits.maxCostUsd}`);
    }
    for (const entry of history) {
      if (entry.role !== 'tool' || !entry.approval?.approved) continue;
      const { callId } = entry.approval;
      const effects = accepted.get(callId) ?? [];
      if ('result' in entry) {
        if (entry.verified) report.verify.recorded++;
        if (NON_IDEMPOTENT.has(entry.tool) && effects.length !== 1) {
          v.push(`${s.runId}: ${entry.tool} ${callId} recorded as done with ${effects.length} accepted attempts`);
        }
        if (entry.tool === 'ship' && !rows.some((r) => r.accepted && r.key === keyOf(callId))) {
          v.push(`${s.runId}: ship ${callId} recorded as done, never accepted downstream`);
        }
      } else if (/refused downstream/.test(entry.error)) {
        // Only an owner that lost the run is refused; its result must never be saved.
        v.push(`${s.runId}: ${entry.tool} ${callId} recorded a refusal by the fence: ${entry.error}`);
      }
    }
  }
  return records;
}

/** Each recorded decision was applied, or its call asked again after a crash, or dropped and decided again. */
function checkDecisions(records: Map<string, RunRecord>, { observed, report }: Input): void {
  const later = new Map<string, number>();
  observed.decisions.forEach((d, i) => {
    later.set(d.callId, i);
  });
  observed.decisions.forEach((d, i) => {
    report.decisions[d.approve ? 'approved' : 'denied']++;
    if (d.edited) report.decisions.edited++;
    if (d.unknown) report.decisions.unknownOutcome++;
    const record = records.get(d.runId);
    const entries = (record?.history ?? []).flatMap((e) => (e.role === 'tool' && e.approval ? [e.approval] : []));
    const applied = entries.find((a) => a.callId === d.callId);
    if (applied) {
      report.decisions.applied++;
      if (applied.approved !== d.approve || (d.edited && !same(applied.args, d.args))) {
        report.violations.push(`${d.callId}: recorded ${JSON.stringify(d)}, applied ${JSON.stringify(applied)}`);
      }
      return;
    }
    const askedAgain =
      entries.some((a) => keyOf(a.callId) === d.key && attemptOf(a.callId) > d.attempt) ||
      (record?.pendingKeys.get(d.key) ?? 0) > d.attempt;
    if (askedAgain) report.decisions.superseded++;
    else if (observed.dropped.includes(d.callId) && (later.get(d.callId) ?? i) > i) {
      // A worker drops a decision whose checks fail when applied (a tool's schema or rule changed,
      // edits not allowed); nothing here changes them, so a drop has no reason: a decision lost.
      report.decisions.dropped++;
      report.violations.push(`decision dropped without a reason: ${d.callId} on ${d.runId}, decided again`);
    } else report.violations.push(`decision lost: ${d.callId} (${d.approve ? 'approve' : 'deny'}) on ${d.runId}`);
  });
}

/**
 * No group spent past its limit (`store.groupSpend`). Owners that had lost their run (paused or
 * cut off past their lease while another worker took it over) are counted apart, as figures: the
 * holds they asked (the store refuses them) and the charges they sent (adding nothing once their
 * hold was charged as spent). Their calls must not push a group over either.
 */
async function checkGroups(records: Map<string, RunRecord>, { store, limits, observed, report }: Input): Promise<void> {
  // A hold or charge sent after another owner's claim of the run was answered is a lost owner's.
  const claims = countBy(observed.leases, (l) => l.runId);
  const stale = (e: { runId: string; token: number; at: number }) =>
    (claims.get(e.runId) ?? []).some((l) => l.token > e.token && l.at < e.at);
  for (const [group, limitUsd] of Object.entries(limits)) {
    const spend = await store.groupSpend(group);
    const runsUsd = sumUsd([...records.values()].filter((r) => r.group === group).map((r) => micro(r.costUsd)));
    const staleHolds = observed.holds.filter((h) => h.group === group && stale(h));
    const staleCharges = observed.charges.filter((c) => c.group === group && stale(c));
    report.groups[group] = {
      spentUsd: spend.costUsd,
      limitUsd,
      runsUsd,
      exhausted: spend.exhausted,
      staleHolds: staleHolds.length,
      staleChargesUsd: sumUsd(staleCharges.map((c) => c.costMicroUsd)),
    };
    if (micro(spend.costUsd) > micro(limitUsd)) {
      report.violations.push(
        `group ${group} spent $${spend.costUsd} > $${limitUsd} (owners that had lost their run asked ${staleHolds.length} holds)`,
      );
    }
  }
}

const sumUsd = (micros: number[]) => micros.reduce((a, b) => a + b, 0) / 1e6;
