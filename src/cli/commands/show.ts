/** `tollgate show <runId>`: a run's history, pending call and budgets. */
import { Command } from 'commander';
import { headLength } from '../../../machines/compaction.js';
import { EXIT } from '../exit-codes.js';
import { budgetLine, colorsFor, entryLine, json, pendingLines, statusText } from '../format.js';
import { out } from '../output.js';
import { type Act, type Common, jsonOption, readRun, storeOption, withStore } from './shared.js';

/** `tollgate show`. */
export function showCommand(act: Act): Command {
  return new Command('show')
    .description('show a run: its history, pending call and budgets')
    .argument('<runId>')
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(
      act(async (runId: string, o: Common) =>
        withStore(o, { create: false }, async (opened) => {
          const { record, state } = await readRun(opened, runId);
          if (o.json) {
            out(`${json({ ...state, version: record.version, updatedAt: record.updatedAt })}\n`);
            return EXIT.ok;
          }
          const c = colorsFor(process.stdout);
          out(
            `run ${state.runId} · ${statusText(state.status, c)} · v${record.version} · ${record.updatedAt} · store ${opened.location.display}\n`,
          );
          out(`${budgetLine(state)}${state.stoppedBy ? ` · stopped by ${state.stoppedBy}` : ''}\n`);
          const head = headLength(state.history);
          for (const [i, entry] of state.history.entries()) out(`${entryLine(entry, c, i, head)}\n`);
          for (const pending of state.pendingCalls) for (const line of pendingLines(pending, c)) out(`${line}\n`);
          if (state.error) out(`${c.red(`error: ${state.error}`)}\n`);
          if (state.status === 'cancelled') out(`cancelled${state.cancelReason ? `: ${state.cancelReason}` : ''}\n`);
          return EXIT.ok;
        }),
      ),
    );
}
