/**
 * The machine as Stately's tools and other statechart tools see it: `tollgate machine --format
 * xstate` (a config `createMachine` takes), `--format scxml`, `--format json` and Mermaid. Each is
 * held against the live machine: the same states (kinds, initial states, invoked actors), and the
 * same transitions — source, event, targets, guard name, actions, eventless and targetless ones
 * included. XState's own `toJSON()` and @xstate/graph's directed graph leave the eventless ones out:
 * the exports are checked to have what those have and what they miss.
 */
import { DOMParser, type Element } from '@xmldom/xmldom';
import { toDirectedGraph } from '@xstate/graph';
import { describe, expect, it } from 'vitest';
import { type AnyStateMachine, type AnyStateNode, createMachine } from 'xstate';
import { agentMachine } from '../machines/index.js';
import { machineConfig, machineGraph, machineMermaid, machineScxml } from '../src/cli/diagram.js';

/** A machine described as plain data: what a drawing must show. */
interface Described {
  states: string[];
  transitions: string[];
}

const guardOf = (guard: unknown): string => {
  if (guard === undefined) return '';
  if (typeof guard === 'string') return guard;
  throw new Error(`a guard that is not named: ${String(guard)}`);
};

/** Walks a machine's state nodes: its states and every transition (always ones included). */
function describeMachine(machine: AnyStateMachine): Described {
  const states: string[] = [];
  const transitions: string[] = [];
  const visit = (node: AnyStateNode) => {
    const initial = node.initial?.target?.[0]?.id ?? '';
    const invoke = node.invoke.map((i) => `${i.id}:${String(i.src)}`).join(',');
    states.push(`${node.id} ${node.type} initial=${initial} invoke=${invoke}`);
    for (const t of [...(node.always ?? []), ...[...node.transitions.values()].flat()]) {
      const actions = t.actions.map((a) => (typeof a === 'string' ? a : String((a as { type?: string }).type)));
      const targets = (t.target ?? []).map((n) => n.id).join(',');
      transitions.push(
        `${node.id} |${t.eventType}| -> ${targets} [${guardOf(t.guard)}] (${actions.join(',')})${t.reenter ? ' reenter' : ''}`,
      );
    }
    for (const child of Object.values(node.states) as AnyStateNode[]) visit(child);
  };
  visit(machine.root);
  return { states: states.sort(), transitions: transitions.sort() };
}

/** Reads the SCXML export back into the same description. */
function describeScxml(xml: string): Described {
  const errors: string[] = [];
  const doc = new DOMParser({ onError: (level, message) => errors.push(`${level}: ${message}`) }).parseFromString(
    xml,
    'text/xml',
  );
  expect(errors).toEqual([]);
  const root = doc.documentElement as unknown as Element;
  expect(root.localName).toBe('scxml');
  expect(root.namespaceURI).toBe('http://www.w3.org/2005/07/scxml');
  const states: string[] = [];
  const transitions: string[] = [];
  const elements = (parent: Element, name: string) =>
    Array.from(parent.childNodes).filter(
      (n): n is Element => n.nodeType === 1 && (n as Element).localName === name,
    ) as Element[];
  const visit = (el: Element) => {
    const id = el.getAttribute('id') as string;
    const children = [...elements(el, 'state'), ...elements(el, 'final')];
    const kind = el.localName === 'final' ? 'final' : children.length > 0 ? 'compound' : 'atomic';
    const invoke = elements(el, 'invoke')
      .map((i) => `${i.getAttribute('id')}:${i.getAttribute('src')}`)
      .join(',');
    states.push(`${id} ${kind} initial=${el.getAttribute('initial') ?? ''} invoke=${invoke}`);
    for (const t of elements(el, 'transition')) {
      const actions = Array.from(t.childNodes)
        .filter((n): n is Element => n.nodeType === 1)
        .map((a) => (a as Element).getAttribute('name'));
      const targets = (t.getAttribute('target') ?? '').split(' ').filter(Boolean).join(',');
      const reenter = t.getAttribute('type') === 'external' ? ' reenter' : '';
      transitions.push(
        `${id} |${t.getAttribute('event') ?? ''}| -> ${targets} [${t.getAttribute('cond') ?? ''}] (${actions.join(',')})${reenter}`,
      );
    }
    for (const child of children) visit(child);
  };
  const [top] = elements(root, 'state');
  expect(root.getAttribute('initial')).toBe(top?.getAttribute('id'));
  visit(top as Element);
  return { states: states.sort(), transitions: transitions.sort() };
}

const live = describeMachine(agentMachine);

describe('the machine as Stately and statechart tools see it', () => {
  it('names every guard: no and()/not() of names, which the extractor and toJSON show as code or not at all', () => {
    expect(live.transitions.length).toBeGreaterThan(30);
    for (const t of live.transitions) expect(t).not.toMatch(/\[.*[&|!(].*\]/);
  });

  it('--format xstate: a config createMachine takes, with the same states and transitions as the live machine', () => {
    const text = JSON.stringify(machineConfig());
    const again = createMachine(JSON.parse(text));
    expect(describeMachine(again)).toEqual(live);
    // The eventless transitions XState's toJSON() leaves out are in the export.
    const always = live.transitions.filter((t) => t.includes(' || '));
    expect(always.length).toBe(11);
    expect(text).toContain('"always"');
  });

  it('--format scxml: SCXML with the same states and transitions, eventless and targetless ones included', () => {
    const scxml = machineScxml();
    expect(scxml.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n<scxml ')).toBe(true);
    const read = describeScxml(scxml);
    // SCXML has no "compound" kind of its own: a state with children is one. Kinds aside, equal.
    const kinds = (d: Described) => d.states.map((s) => s.replace(/ (compound|atomic|final) /, ' '));
    expect(kinds(read)).toEqual(kinds(live));
    expect(read.transitions).toEqual(live.transitions);
  });

  it('@xstate/graph: every edge it walks is in the exports, and the eventless ones it misses are too', () => {
    const graph = toDirectedGraph(agentMachine);
    const edges: string[] = [];
    const collect = (node: ReturnType<typeof toDirectedGraph>) => {
      for (const e of node.edges) edges.push(`${e.source.id} |${e.transition.eventType}| -> ${e.target.id}`);
      for (const child of node.children) collect(child);
    };
    collect(graph);
    // A targetless transition is an edge to its own state there.
    const targeted = live.transitions.flatMap((t) => {
      const [, from, event, to] = /^(\S+) \|(.*?)\| -> (\S*) /.exec(t) as RegExpExecArray;
      return (to ? to.split(',') : [from]).map((target) => `${from} |${event}| -> ${target}`);
    });
    for (const e of edges) expect(targeted).toContain(e);
    const missed = targeted.filter((e) => !edges.includes(e));
    expect(missed.length).toBeGreaterThan(0);
    expect(missed.every((e) => e.includes(' || '))).toBe(true); // only the eventless ones
  });

  it('--format json and Mermaid: every transition, targetless ones as "stays", each guard by name', () => {
    const { edges } = machineGraph();
    const mermaid = machineMermaid();
    for (const t of live.transitions) {
      const [, from = '', event = '', to = '', guard = ''] = /^(\S+) \|(.*?)\| -> (\S*) \[(.*?)\]/.exec(t) ?? [];
      if (from === 'agent') continue; // drawn from every live state, checked below
      const shown =
        event === ''
          ? 'always'
          : event.replace(/^xstate\.done\.actor\./, 'done:').replace(/^xstate\.error\.actor\./, 'error:');
      for (const target of to ? to.split(',') : [from]) {
        const edge = edges.find(
          (e) => e.from === from && e.to === target && e.event === shown && (e.guard ?? '') === guard,
        );
        expect(edge, t).toBeDefined();
        expect(edge?.stays === true, t).toBe(to === '');
      }
    }
    for (const s of ['idle', 'running', 'awaiting_approval', 'budget_exhausted', 'failed']) {
      expect(mermaid).toContain(`${s} --> cancelled : CANCEL`);
      expect(edges.some((e) => e.from === `agent.${s}` && e.event === 'EXTEND_BUDGET' && e.stays)).toBe(true);
    }
    expect(mermaid).toContain('running_executing --> running_executing : DECIDE [decisionsMatch] (stays)');
  });
});
