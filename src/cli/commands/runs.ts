/** `tollgate runs`: lists runs; `--status awaiting_approval` is the approval inbox. */
import { Command, Option } from 'commander';
import type { Status } from '../../../machines/types.js';
import { STATUSES } from '../../../machines/types.js';
import { EXIT } from '../exit-codes.js';
import { colorsFor, json, statusText } from '../format.js';
import { storeName } from '../open-store.js';
import { out } from '../output.js';
import { type Act, type Common, jsonOption, storeOption, withStore } from './shared.js';

/** `tollgate runs`. */
export function runsCommand(act: Act): Command {
  return new Command('runs')
    .description('list runs (the approval inbox: --status awaiting_approval)')
    .addOption(new Option('--status <status>', 'only runs in this status').choices([...STATUSES]))
    .addOption(storeOption())
    .addOption(jsonOption())
    .addHelpText('after', '\nExample:\n  $ tollgate runs --status awaiting_approval --store postgres://tollgate@db/ops')
    .action(
      act(async (o: Common & { status?: Status }) =>
        withStore(o, { create: false }, async (opened) => {
          const runs = await opened.store.list(o.status ? { status: o.status } : {});
          if (o.json) {
            out(`${json(runs)}\n`);
            return EXIT.ok;
          }
          const c = colorsFor(process.stdout);
          const which = o.status ? ` ${o.status}` : '';
          if (runs.length === 0) {
            out(`no runs${which} in ${storeName(opened)}\n`);
            return EXIT.ok;
          }
          out(`${c.dim(`${runs.length} run${runs.length === 1 ? '' : 's'}${which} in ${storeName(opened)}`)}\n`);
          for (const r of runs) {
            const pending = r.pending ? `  ${r.pending.tool} ${json(r.pending.args)}` : '';
            // Recorded with approve/deny --queue: decided, waiting for a worker to apply it.
            const decided = r.decision ? `  ${c.dim(`(decided by ${r.decision.by}; a worker applies it)`)}` : '';
            const agent = r.agent ? `  ${r.agent}` : '';
            out(`${r.runId}  ${statusText(r.status, c)}  v${r.version}  ${r.updatedAt}${agent}${pending}${decided}\n`);
          }
          return EXIT.ok;
        }),
      ),
    );
}
