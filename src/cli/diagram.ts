/**
 * The agent machine as a diagram: Mermaid `stateDiagram-v2` for docs, or JSON for tools.
 * `always` transitions are added by hand: `machine.toJSON()` omits them (XState pitfall).
 */
import type { AnyStateNode } from 'xstate';
import { agentMachine } from '../../machines/index.js';

interface Edge {
  from: string;
  /** The target; for a targetless transition (`stays`), the state itself. */
  to: string;
  event: string;
  guard?: string;
  /** A targetless transition: the state does not change (only its actions run). */
  stays?: true;
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

/** The edges of `node`'s own transitions (and `always`), drawn from `from`. */
function edgesOf(node: AnyStateNode, from: string): Edge[] {
  const transitions = [...node.transitions.values()].flat().concat(node.always ?? []);
  return transitions.flatMap((t): Edge[] => {
    const base = { from, event: eventName(t.eventType), guard: guardName(t.guard) };
    if (!t.target?.length) return [{ ...base, to: from, stays: true }];
    return t.target.map((target) => ({ ...base, to: target.id }));
  });
}

function walk(node: AnyStateNode, edges: Edge[], nodes: AnyStateNode[]): void {
  nodes.push(node);
  edges.push(...edgesOf(node, node.id));
  for (const child of Object.values(node.states) as AnyStateNode[]) walk(child, edges, nodes);
}

/** The machine as states and edges (with `always` transitions, which toJSON omits). */
export function machineGraph() {
  const edges: Edge[] = [];
  const nodes: AnyStateNode[] = [];
  for (const child of Object.values(agentMachine.root.states) as AnyStateNode[]) walk(child, edges, nodes);
  // Root-level transitions (CANCEL, EXTEND_BUDGET from any state) are drawn from each non-final state.
  for (const node of Object.values(agentMachine.root.states) as AnyStateNode[]) {
    if (node.type !== 'final') edges.push(...edgesOf(agentMachine.root, node.id));
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
    // A change of limits is taken in every state: one note says so, not a loop on each.
    if (e.event === 'EXTEND_BUDGET' && e.stays && e.from !== 'agent.budget_exhausted') continue;
    const stays = e.stays ? ' (stays)' : '';
    const line = `  ${local(e.from)} --> ${local(e.to)} : ${e.event}${e.guard ? ` [${e.guard}]` : ''}${stays}`;
    if (!lines.includes(line)) lines.push(line); // budget_exhausted's own EXTEND_BUDGET and the root's
  }
  lines.push('  note right of idle : EXTEND_BUDGET, in every state but the final ones, changes the limits');
  return `${lines.join('\n')}\n`;
}

/**
 * The machine as an XState config: what `createMachine` takes and Stately's editor imports. It is
 * the definition itself, written as JSON: every state, transition, guard and action by its name,
 * with `always` transitions and descriptions. The functions are left out (the context factory, the
 * invoked actors' inputs): the runtime provides them.
 */
export function machineConfig(): Record<string, unknown> {
  return JSON.parse(JSON.stringify(agentMachine.config)) as Record<string, unknown>;
}

const xmlText = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** The names of a transition's actions (all of Tollgate's are named). */
function actionNames(actions: readonly unknown[]): string[] {
  return actions.map((a) =>
    typeof a === 'string' ? a : String((a as { type?: unknown } | null)?.type ?? 'inline action'),
  );
}

/** One transition as SCXML: `event` (none: eventless), `cond` (the guard's name), `target` (none: targetless). */
function scxmlTransition(t: AnyStateNode['always'] extends (infer T)[] | undefined ? T : never, pad: string): string {
  const attrs = [
    t.eventType === '' ? '' : ` event="${xmlText(t.eventType)}"`,
    t.guard ? ` cond="${xmlText(guardName(t.guard) ?? '?')}"` : '',
    t.target?.length ? ` target="${t.target.map((n) => n.id).join(' ')}"` : '',
    t.reenter && t.target?.length ? ' type="external"' : t.target?.length ? ' type="internal"' : '',
  ].join('');
  const actions = actionNames(t.actions);
  if (actions.length === 0) return `${pad}<transition${attrs}/>`;
  const body = actions.map((a) => `${pad}  <tollgate:action name="${xmlText(a)}"/>`).join('\n');
  return `${pad}<transition${attrs}>\n${body}\n${pad}</transition>`;
}

function scxmlState(node: AnyStateNode, pad: string): string {
  const kind = node.type === 'final' ? 'final' : 'state';
  const children = Object.values(node.states) as AnyStateNode[];
  const initial = node.initial?.target?.[0]?.id;
  const lines = [`${pad}<${kind} id="${node.id}"${initial ? ` initial="${initial}"` : ''}>`];
  if (node.description) lines.push(`${pad}  <!-- ${xmlText(node.description).replace(/--/g, '- -')} -->`);
  for (const i of node.invoke) {
    lines.push(`${pad}  <invoke id="${xmlText(i.id)}" type="tollgate:actor" src="${xmlText(String(i.src))}"/>`);
  }
  const transitions = [...(node.always ?? []), ...[...node.transitions.values()].flat()];
  for (const t of transitions) lines.push(scxmlTransition(t, `${pad}  `));
  for (const child of children) lines.push(scxmlState(child, `${pad}  `));
  lines.push(`${pad}</${kind}>`);
  return lines.join('\n');
}

/**
 * The machine as SCXML (W3C State Chart XML): states nested as in the machine (the root is the
 * state `agent`, which holds the transitions of any state: CANCEL, EXTEND_BUDGET), each
 * transition with its event (XState's names: `xstate.done.actor.policy` is the policy's answer),
 * its guard's name as `cond`, its targets, and its actions as `tollgate:action` elements; `always`
 * transitions have no event, targetless ones no target.
 */
export function machineScxml(): string {
  const root = agentMachine.root;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<scxml xmlns="http://www.w3.org/2005/07/scxml" xmlns:tollgate="urn:tollgate:scxml" version="1.0" name="${root.id}" initial="${root.id}">`,
    scxmlState(root, '  '),
    '</scxml>',
    '',
  ].join('\n');
}
