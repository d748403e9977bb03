/**
 * Version 1 → 2. Version 1 held one call per step: `pending` (awaiting approval) or `inflight`
 * (executing). Version 2 holds the step's calls in `calls` and the run's standing approvals in
 * `standing`; the invoked tool actor's input is the call. History entries are unchanged: every
 * version-1 entry is a version-2 entry.
 *
 * A blob that is not a version-1 snapshot is passed on as it is, for validation to refuse.
 */

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function callOf(old: Record<string, unknown>, state: 'pending' | 'running'): Record<string, unknown> {
  return {
    id: old.id,
    key: old.key,
    step: old.step,
    index: 1,
    toolCallId: old.key,
    modelId: false,
    tool: old.tool,
    args: old.args,
    attempt: old.attempt,
    state,
    requestedAt: state === 'pending' ? old.requestedAt : null,
    expiresAt: state === 'pending' ? old.expiresAt : null,
    outcome: state === 'pending' && old.outcome === 'unknown' ? 'unknown' : null,
    approval: state === 'running' ? old.approval : null,
    done: null,
  };
}

export function migrateV1(snapshot: unknown): unknown {
  if (!isObject(snapshot) || !isObject(snapshot.context)) return snapshot;
  const { pending, inflight, ...rest } = snapshot.context;
  const calls: Record<string, unknown>[] = [];
  if (isObject(pending)) calls.push(callOf(pending, 'pending'));
  if (isObject(inflight)) calls.push(callOf(inflight, 'running'));
  const context = { ...rest, calls, standing: {} };
  const children = isObject(snapshot.children) ? snapshot.children : {};
  const tool = children.tool;
  // The tool actor's input was the in-flight call; now it is the step call.
  const migratedChildren =
    isObject(tool) && isObject(tool.snapshot) && calls[0]
      ? { ...children, tool: { ...tool, snapshot: { ...tool.snapshot, input: calls[0] } } }
      : children;
  return { ...snapshot, context, children: migratedChildren };
}
