/**
 * The agent machine as a diagram: Mermaid `stateDiagram-v2` for docs, or JSON for tools.
 * `always` transitions are added by hand: `machine.toJSON()` omits them (XState pitfall).
 */
import type { AnyStateNode } from 'xstate';
import { agentMachine } from '../../machines/index.js';

interface Edge {
  from: string;
  to: string;
  event: string;
  guard?: string;
}

const local = (id: string) => id.replace(/^agent\./, '').replace(/\./g, '_');
const eventName = (type: string) =>
  type === '' ? 'always' : type.replace(/^xstate\.done\.actor\./, 'done:').replace(/^xstate\.error\.actor\./, 'error:');

/** A guard as drawn: its name, or XState's `and`/`or`/`not` of names as `a && b`, `a || b`, `!a`. */
function guardName(guard: unknown): string | undefined {
  if (typeof guard === 'string') return guard;
  const inner = typeof guard === 'function' ? (guard as unknown as { guards?: unknown }).guards : undefined;
  if (typeof guard === 'function' && Array.isArray(inner)) {
    const parts = inner.map((g) => guardName(g) ?? '?');
    if (guard.name === 'not') return `!${parts.join('')}`;
    return parts.join(guard.name === 'or' ? ' || ' : ' && ');
  }
  if (guard && typeof guard === 'object' && 'type' in guard) return String((guard as { type: unknown }).type);
  return undefined;
}

function walk(node: AnyStateNode, edges: Edge[], nodes: AnyStateNode[]): void {
  nodes.push(node);
  const transitions = [...node.transitions.values()].flat().concat(node.always ?? []);
  for (const t of transitions) {
    for (const target of t.target ?? []) {
      edges.push({ from: node.id, to: target.id, event: eventName(t.eventType), guard: guardName(t.guard) });
    }
  }
  for (const child of Object.values(node.states) as AnyStateNode[]) walk(child, edges, nodes);
}

/** The machine as states and edges (with `always` transitions, which toJSON omits). */
export function machineGraph() {
  const edges: Edge[] = [];
  const nodes: AnyStateNode[] = [];
  for (const child of Object.values(agentMachine.root.states) as AnyStateNode[]) walk(child, edges, nodes);
  // Root-level transitions (CANCEL from any state) are drawn from each non-final state.
  for (const t of [...agentMachine.root.transitions.values()].flat()) {
    for (const node of Object.values(agentMachine.root.states) as AnyStateNode[]) {
      if (node.type === 'final') continue;
      for (const target of t.target ?? [])
        edges.push({ from: node.id, to: target.id, event: eventName(t.eventType), guard: guardName(t.guard) });
    }
  }
  const states = nodes.map((n) => ({
    id: n.id,
    type: n.type,
    initial: n.initial?.target?.[0]?.id ?? null,
    invoke: n.invoke.map((i) => (typeof i.src === 'string' ? i.src : i.id)),
  }));
  return { id: agentMachine.id, initial: agentMachine.root.initial?.target?.[0]?.id ?? null, states, edges };
}

/** The machine as a Mermaid `stateDiagram-v2`. */
export function machineMermaid(): string {
  const g = machineGraph();
  const lines = ['stateDiagram-v2'];
  if (g.initial) lines.push(`  [*] --> ${local(g.initial)}`);
  for (const s of g.states) {
    if (s.type === 'compound') {
      lines.push(`  state ${local(s.id)} {`);
      if (s.initial) lines.push(`    [*] --> ${local(s.initial)}`);
      for (const child of g.states.filter((x) => x.id.startsWith(`${s.id}.`))) {
        lines.push(`    state "${child.id.slice(s.id.length + 1)}" as ${local(child.id)}`);
      }
      lines.push('  }');
    }
    if (s.type === 'final') lines.push(`  ${local(s.id)} --> [*]`);
    if (s.invoke.length) lines.push(`  note right of ${local(s.id)} : invoke ${s.invoke.join(', ')}`);
  }
  for (const e of g.edges) {
    if (e.event === 'EXTEND_BUDGET' && e.from === e.to) continue;
    lines.push(`  ${local(e.from)} --> ${local(e.to)} : ${e.event}${e.guard ? ` [${e.guard}]` : ''}`);
  }
  return `${lines.join('\n')}\n`;
}
