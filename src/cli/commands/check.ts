/** `tollgate check <module>`: would the module resume every stored run of its agent as it stands? */
import { resolve } from 'node:path';
import { Command } from 'commander';
import { checkResumable } from '../../testing/check-runs.js';
import { loadAgentModule } from '../agent-module.js';
import { EXIT } from '../exit-codes.js';
import { colorsFor, json, terminalSafe } from '../format.js';
import { out } from '../output.js';
import { type Act, type Common, jsonOption, storeOption, withStore } from './shared.js';

/** `tollgate check`. */
export function checkCommand(act: Act): Command {
  return new Command('check')
    .description(
      'before a deploy: would this agent module resume every stored run of its agent that has not ended? exit 8 and a table of the calls that would go otherwise (nothing runs)',
    )
    .argument('<module>', 'the agent module to deploy')
    .addOption(storeOption())
    .addOption(jsonOption())
    .addHelpText('after', '\nExample:\n  $ tollgate check ./agents/support-v2.ts --store postgres://db/tollgate')
    .action(act(check));
}

async function check(modulePath: string, o: Common): Promise<number> {
  const path = resolve(modulePath);
  const definition = await loadAgentModule(path);
  return withStore(o, { create: false }, async (opened) => {
    const { checked, problems } = await checkResumable(opened.store, definition);
    const code = problems.length === 0 ? EXIT.ok : EXIT.wouldBreak;
    if (o.json) {
      out(`${json({ agent: definition.name, checked, problems })}\n`);
      return code;
    }
    const runs = `${checked} run${checked === 1 ? '' : 's'} of ${terminalSafe(definition.name)}`;
    if (problems.length === 0) {
      out(`${runs} checked: each resumes under ${terminalSafe(path)} as it stands\n`);
      return code;
    }
    const c = colorsFor(process.stdout);
    const rows = problems.map((p) => [
      terminalSafe(p.runId),
      p.status ?? '-',
      p.call ? `${terminalSafe(p.call.tool)} ${terminalSafe(p.call.key)}` : '-',
      p.kind,
      terminalSafe(p.message),
    ]);
    const head = ['run', 'status', 'call', 'problem', 'what would happen'];
    const widths = head.slice(0, 4).map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
    const line = (cells: string[]) =>
      cells.map((cell, i) => (i < widths.length ? cell.padEnd(widths[i] ?? 0) : cell)).join('  ');
    out(
      `${c.red(`${runs} checked: ${problems.length} problem${problems.length === 1 ? '' : 's'} under ${terminalSafe(path)}`)}\n`,
    );
    out(`${line(head)}\n`);
    for (const row of rows) out(`${line(row)}\n`);
    return code;
  });
}
