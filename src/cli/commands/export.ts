/** `tollgate export <runId>`: writes a run as a checkpoint (canonical JSON). */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Command } from 'commander';
import { EXIT } from '../exit-codes.js';
import { out } from '../output.js';
import { type Act, type Common, readRun, storeOption, withStore } from './shared.js';

/** `tollgate export`. */
export function exportCommand(act: Act): Command {
  return new Command('export')
    .description('write a run as a checkpoint (canonical JSON)')
    .argument('<runId>')
    .option('-o, --output <file>', 'write to a file instead of stdout')
    .addOption(storeOption())
    .action(
      act(async (runId: string, o: Common & { output?: string }) =>
        withStore(o, { create: false }, async (opened) => {
          const { blob } = await readRun(opened, runId);
          if (o.output === undefined) {
            out(`${blob}\n`);
            return EXIT.ok;
          }
          writeFileSync(o.output, blob);
          out(`exported run ${runId} from store ${opened.location.display} to ${resolve(o.output)}\n`);
          return EXIT.ok;
        }),
      ),
    );
}
