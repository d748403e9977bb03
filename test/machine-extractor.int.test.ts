/**
 * What Stately's editor and its VS Code extension read: `@xstate/machine-extractor` parses
 * machines/agent-machine.ts as source text. The machine it reads must be the live one — every
 * state, transition, target and guard, by name (a guard written as `and([...])` came back as inline
 * code, a `reenter` was dropped). The extractor needs XState 4 beside it, so it is installed, at
 * pinned versions, into a project of its own under node_modules/.cache (once, then reused).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { type AnyStateNode, createMachine } from 'xstate';
import { agentMachine } from '../machines/index.js';
import { repoRoot } from './support/package-docs.js';
import { childEnv } from './support/package-tarball.js';

const run = promisify(execFile);
const EXTRACTOR = '@xstate/machine-extractor@0.16.0';
const XSTATE_4 = 'xstate@4.38.3';
const project = join(repoRoot, 'node_modules', '.cache', 'tollgate-extractor');

/** The extractor's config of the machine in `file`, as JSON, read in a process of its own. */
async function extracted(file: string): Promise<Record<string, unknown>> {
  mkdirSync(project, { recursive: true });
  if (!existsSync(join(project, 'node_modules', '@xstate', 'machine-extractor'))) {
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'extractor', private: true }));
    await run('npm', ['install', '--no-audit', '--no-fund', '--save-exact', EXTRACTOR, XSTATE_4], {
      cwd: project,
      env: childEnv(),
    });
  }
  const script = `
    const { extractMachinesFromFile } = require('@xstate/machine-extractor');
    const source = require('node:fs').readFileSync(process.argv[1], 'utf8');
    const [machine] = extractMachinesFromFile(source).machines;
    process.stdout.write(JSON.stringify(machine.toConfig({ anonymousInlineImplementations: false })));`;
  const { stdout } = await run(process.execPath, ['-e', script, file], { cwd: project, env: childEnv() });
  return JSON.parse(stdout) as Record<string, unknown>;
}

/** The extractor's (XState 4 shaped) config as an XState 5 config: `cond` → `guard`, named actions by name. */
function asV5(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(asV5);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    if (key === 'cond') {
      const cond = v as { kind: string; type: string };
      out.guard = cond.kind === 'named' ? cond.type : `inline: ${cond.type}`;
    } else if (key === 'actions') {
      const list = (Array.isArray(v) ? v : [v]) as { kind: string; action: { type: string } }[];
      out.actions = list.map((a) => (a.kind === 'named' ? a.action.type : `inline: ${a.action.type}`));
    } else if (key === 'kind') {
      // The extractor's own marker of a named or inline invoke source.
    } else out[key] = asV5(v);
  }
  return out;
}

/** Every transition of a machine: source, event, targets, guard name, actions. */
function transitionsOf(root: AnyStateNode): string[] {
  const out: string[] = [];
  const visit = (node: AnyStateNode) => {
    const invoke = node.invoke.map((i) => `${i.id}:${String(i.src)}`).join(',');
    out.push(`${node.id} state ${node.type} initial=${node.initial?.target?.[0]?.id ?? ''} invoke=${invoke}`);
    for (const t of [...(node.always ?? []), ...[...node.transitions.values()].flat()]) {
      const actions = t.actions.map((a) => (typeof a === 'string' ? a : String((a as { type?: string }).type)));
      const guard = t.guard === undefined ? '' : typeof t.guard === 'string' ? t.guard : 'an unnamed guard';
      const targets = (t.target ?? []).map((n) => n.id).join(',');
      out.push(
        `${node.id} |${t.eventType}| -> ${targets} [${guard}] (${actions.join(',')})${t.reenter ? ' reenter' : ''}`,
      );
    }
    for (const child of Object.values(node.states) as AnyStateNode[]) visit(child);
  };
  visit(root);
  return out.sort();
}

describe("Stately's machine extractor", () => {
  it('reads machines/agent-machine.ts as the live machine: every state, transition and guard by its name', async () => {
    const file = join(repoRoot, 'machines', 'agent-machine.ts');
    const config = asV5(await extracted(file)) as Record<string, unknown>;
    expect(JSON.stringify(config)).not.toContain('inline:');
    const read = createMachine(config as never);
    expect(transitionsOf(read.root)).toEqual(transitionsOf(agentMachine.root));
    // The descriptions Stately shows come through too.
    const source = readFileSync(file, 'utf8');
    const deciding = read.root.states.running?.states.deciding as AnyStateNode | undefined;
    const described = deciding?.description ?? '';
    expect(described).not.toBe('');
    expect(source).toContain(described.slice(0, 40));
  }, 180_000);
});
