/**
 * Invariant checks on a world at a quiet moment. Each returns violations as strings (never
 * throws), so a test of the tests can collect what a faulty variant trips. The ledger's own
 * checks (made as calls happen) are included.
 */

import type { AgentContext, HistoryEntry } from '../../../machines/types.js';
import { Agent } from '../../../src/agent.js';
import { decodeCheckpoint, encodeCheckpoint } from '../../../src/checkpoint.js';
import { isToolName, TOOLS } from './alphabet.js';
import type { World } from './world.js';

const SHAPES: Record<string, (e: Record<string, unknown>) => boolean> = {
  user: (e) => typeof e.content === 'string',
  assistant: (e) => ('tool' in e ? typeof e.tool === 'string' && isObject(e.args) && !('final' in e) : 'final' in e),
  tool: (e) =>
    typeof e.tool === 'string' && 'result' in e !== 'error' in e && (!('error' in e) || typeof e.error === 'string'),
};

function isObject(v: unknown): boolean {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

const needsApproval = (tool: string) => isToolName(tool) && TOOLS[tool].sideEffect;

/** Everything checked at a quiet moment, plus the ledger's violations so far. */
export function checkWorld(world: World, full = false): string[] {
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
  const ledger = world.ledger.data;

  // Invariant 6: history keeps the contract shapes, whatever the policy and tools did.
  for (const [i, e] of c.history.entries()) {
    const shape = SHAPES[(e as { role: string }).role];
    if (!shape?.(e as unknown as Record<string, unknown>))
      out.push(`inv6: history[${i}] has no contract shape: ${JSON.stringify(e)}`);
  }

  // Invariant 3 (the agent's count): every answered policy call is counted, across resumes.
  if (c.steps !== ledger.completedSteps.length) {
    out.push(`inv3: the run counts ${c.steps} steps, the policy answered ${ledger.completedSteps.length} times`);
  }
  const tokens = c.usage.inputTokens + c.usage.outputTokens;
  if (tokens !== ledger.tokens) out.push(`inv3: the run counts ${tokens} tokens, the policy reported ${ledger.tokens}`);
  if (c.activeMs !== ledger.activeMs)
    out.push(`inv3: the run counts ${c.activeMs} active ms, calls took ${ledger.activeMs}`);

  // Invariant 1 at the write-ahead record: a call that needs approval is in flight only approved.
  if (c.inflight && needsApproval(c.inflight.tool)) {
    const approval = c.inflight.approval;
    const human = approval ? ledger.decisions[approval.callId] : undefined;
    if (!approval?.approved || !human?.approved) {
      out.push(`inv1: ${c.inflight.tool} key ${c.inflight.key} is in flight without a human's approval`);
    }
  }
  // A pure tool is never held for a human (the approval rule read the other way round).
  if (c.pending && !needsApproval(c.pending.tool))
    out.push(`approval: ${c.pending.tool} awaits approval but needs none`);
  // The runtime's last line of defence firing means the machine tried to run an unapproved call.
  for (const e of c.history) {
    if ('error' in e && e.error.startsWith('refused:'))
      out.push(`inv1: the machine put an unapproved call in flight: ${e.error}`);
  }

  // Invariant 7: each denial in time reaches the model as an observation.
  const denials = Object.values(ledger.decisions).filter(
    (d) => !d.approved && (d.expiresAt === null || d.at < d.expiresAt),
  );
  const seen = c.history.filter((e: HistoryEntry) => 'error' in e && e.error.startsWith('denied by human:')).length;
  if (seen !== denials.length) out.push(`inv7: ${denials.length} denials, ${seen} denial observations`);

  // Invariant 2: a deduplicating tool's approved call that completed took effect exactly once.
  for (const e of c.history) {
    if (e.role === 'tool' && 'result' in e && e.approval?.approved && isToolName(e.tool) && TOOLS[e.tool].idempotent) {
      const key = e.approval.callId.split('#')[0] as string;
      if (!ledger.applied.includes(key)) out.push(`inv2: ${e.tool} key ${key} completed but never took effect`);
    }
  }
  return [...ledger.violations, ...out];
}
