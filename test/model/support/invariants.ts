/**
 * Invariant checks on a world at a quiet moment. Each returns violations as strings (never
 * throws), so a test of the tests can collect what a faulty variant trips. The ledger's own
 * checks (made as calls happen) are included, and so is what users check their own runs with:
 * `checkInvariants` of tollgate/testing, on the checkpoint, with the world's tools. Every check is
 * per call: a step's calls are each their own unit of the invariants.
 */

import type { AgentContext, Json, StepCall } from '../../../machines/types.js';
import { Agent } from '../../../src/agent.js';
import { decodeCheckpoint, encodeCheckpoint } from '../../../src/checkpoint/index.js';
import { historyProblem } from '../../../src/testing/history-shape.js';
import { checkInvariants } from '../../../src/testing/index.js';
import { statusOf } from './alphabet.js';
import { isIdempotent, isSideEffect, ruleOf } from './tools.js';
import type { World } from './world.js';
import { worldTools } from './world-tools.js';

/** The world's tools as `checkInvariants` judges by them: their rules and flags (it never calls `fn`). */
const JUDGE_TOOLS = worldTools(() => () => null);

/** Every observation the run holds: the history's tool entries and the finished calls of the step. */
function observations(
  c: AgentContext,
): { tool: string; error?: string; result?: Json; approval?: StepCall['approval'] }[] {
  const entries = c.history.flatMap((e) => (e.role === 'tool' ? [e as never] : []));
  const done = c.calls.flatMap((call) => (call.done ? [{ tool: call.tool, ...call.done } as never] : []));
  return [...entries, ...done];
}

/** Everything checked at a quiet moment, plus the ledger's violations so far. */
export async function checkWorld(world: World, full = false): Promise<string[]> {
  const out: string[] = [];
  // Invariant 5: valid JSON, round-trips exactly, resumable; loading it runs nothing.
  let blob: string;
  try {
    blob = world.agent.checkpoint();
  } catch (error) {
    return [...world.ledger.data.violations, `inv5: checkpoint() threw ${String(error)}`];
  }
  let parsed: { snapshot: { value: unknown; context: AgentContext } };
  try {
    parsed = JSON.parse(blob);
  } catch {
    return [...world.ledger.data.violations, 'inv5: the checkpoint is not JSON'];
  }
  try {
    // The codec round trip at every step; the full Agent.resume round trip is checked at every
    // crash (world.ts) and at the end of every path, where it costs a machine per check.
    const again = full
      ? Agent.resume(blob, world.probeOptions()).checkpoint()
      : encodeCheckpoint(decodeCheckpoint(blob));
    if (again !== blob) out.push('inv5: resume(blob).checkpoint() !== blob');
  } catch (error) {
    out.push(`inv5: the checkpoint does not load: ${String(error)}`);
  }
  const c = parsed.snapshot.context;
  const status = statusOf(parsed.snapshot.value);
  const ledger = world.ledger.data;

  // Invariant 6: history keeps the contract's shapes and pairs every call with its observation.
  const mode = status === 'cancelled' ? 'cancelled' : c.calls.length > 0 ? 'inProgress' : 'complete';
  const shape = historyProblem(c.history, mode);
  if (shape) out.push(`inv6: ${shape.message}`);

  // Invariant 3 (the agent's count): every answered policy call is counted, across resumes.
  if (c.steps !== ledger.completedSteps.length) {
    out.push(`inv3: the run counts ${c.steps} steps, the policy answered ${ledger.completedSteps.length} times`);
  }
  const tokens = c.usage.inputTokens + c.usage.outputTokens;
  if (tokens !== ledger.tokens) out.push(`inv3: the run counts ${tokens} tokens, the policy reported ${ledger.tokens}`);
  if (Math.round(c.usage.costUsd * 1e6) !== ledger.costMicro) {
    out.push(`inv3: the run counts $${c.usage.costUsd}, the policy reported ${ledger.costMicro} micro-dollars`);
  }
  if (c.activeMs !== ledger.activeMs)
    out.push(`inv3: the run counts ${c.activeMs} active ms, calls took ${ledger.activeMs}`);

  // Invariant 1 at the write-ahead record: a call that needs a human is in flight only approved
  // by one, or under a standing approval a human gave.
  const running = c.calls.find((call) => call.state === 'running');
  if (running && isSideEffect(running.tool)) {
    const spec = ledger.step?.calls.find((s) => s.key === running.key);
    if (spec?.verdict !== 'run' || spec.unknown) {
      const a = running.approval;
      const human = a ? ledger.decisions[a.callId] : undefined;
      // The grant that covered the call when the step began (a later grant for the tool, given
      // while this call was queued, replaces it for later steps only).
      const grant = a?.standing === undefined ? undefined : ledger.decisions[a.standing];
      const standing =
        grant?.approved === true &&
        grant.always &&
        grant.tool === running.tool &&
        spec?.approval?.standing === a?.standing;
      if (!a?.approved || !(human?.approved || standing)) {
        out.push(`inv1: ${running.tool} key ${running.key} is in flight without a human's approval`);
      }
    }
  }
  for (const [tool, grant] of Object.entries(c.standing)) {
    const given = ledger.decisions[grant.callId];
    if (!given?.approved || !given.always || given.tool !== tool)
      out.push(`inv1: a standing approval for ${tool} (${grant.callId}) that no human gave`);
  }
  // Only calls the rule sends to a human wait for one (or calls a crash left unknown).
  for (const call of c.calls) {
    if (call.state === 'pending' && ruleOf(call.tool, call.args) !== 'ask' && call.outcome !== 'unknown')
      out.push(`approval: ${call.tool} ${JSON.stringify(call.args)} awaits approval but needs none`);
  }
  const seen = observations(c);
  // The runtime's last line of defence firing means the machine tried to run an unapproved call.
  for (const e of seen) {
    if (e.error?.startsWith('refused:')) out.push(`inv1: the machine put an unapproved call in flight: ${e.error}`);
  }

  // Invariant 7: each denial in time, a human's or a rule's, reaches the model as an observation.
  const denials = Object.values(ledger.decisions).filter(
    (d) => !d.approved && (d.expiresAt === null || d.at < d.expiresAt),
  );
  const human = seen.filter((e) => e.error?.startsWith('denied by human:')).length;
  if (human !== denials.length) out.push(`inv7: ${denials.length} denials, ${human} denial observations`);
  const byRule = seen.filter((e) => e.error?.startsWith('denied by rule:')).length;
  if (byRule !== ledger.ruleDenials.length)
    out.push(`inv7: ${ledger.ruleDenials.length} calls denied by rule, ${byRule} such observations`);

  // Invariant 2: a deduplicating tool's approved call that completed took effect exactly once.
  for (const e of seen) {
    if ('result' in e && e.approval?.approved && isIdempotent(e.tool)) {
      const key = e.approval.callId.split('#')[0] as string;
      if (!ledger.applied.includes(key)) out.push(`inv2: ${e.tool} key ${key} completed but never took effect`);
    }
  }
  for (const v of await checkInvariants(blob, { tools: JUDGE_TOOLS, limits: ledger.peak }))
    out.push(`kit ${v.invariant}: ${v.message}`);
  return [...ledger.violations, ...out];
}
