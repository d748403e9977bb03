/** `tollgate import <file>`: adds a run from a checkpoint file to the store. */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { pendingCalls } from '../../../machines/calls.js';
import { Agent } from '../../agent.js';
import { decodeCheckpoint } from '../../checkpoint/index.js';
import { ConflictError } from '../../errors.js';
import { entryOf, headOf } from '../../store/contract.js';
import { CliUsageError, EXIT } from '../exit-codes.js';
import { json } from '../format.js';
import { out } from '../output.js';
import { type Act, type Common, INERT, jsonOption, storeOption, withStore } from './shared.js';

/** `tollgate import`. */
export function importCommand(act: Act): Command {
  return new Command('import')
    .description('add a run from a checkpoint file to the store')
    .argument('<file>', 'a checkpoint written by export or agent.checkpoint()')
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(
      act(async (file: string, o: Common) => {
        let text: string;
        try {
          text = readFileSync(file, 'utf8').trim();
        } catch (error) {
          throw new CliUsageError(`cannot read ${file}: ${(error as Error).message}`);
        }
        // Checked before the store is opened: a bad file changes nothing.
        const run = decodeCheckpoint(text);
        const status = Agent.resume(text, INERT).status;
        return withStore(o, { create: true }, async (opened) => {
          const { runId } = run.context;
          const write = {
            status,
            head: headOf(run),
            from: 0,
            append: run.context.history.map(entryOf),
            pendingCalls: pendingCalls(run.context.calls),
          };
          try {
            await opened.store.save(runId, write, 0);
          } catch (error) {
            if (error instanceof ConflictError) {
              throw new CliUsageError(`run ${runId} is already in store ${opened.location.display}; nothing imported`);
            }
            throw error;
          }
          out(
            o.json
              ? `${json({ runId, status })}\n`
              : `imported run ${runId} (${status}) into store ${opened.location.display}\n`,
          );
          return EXIT.ok;
        });
      }),
    );
}
