/** `tollgate fork <runId> --at <step>`: a new run holding a stored run's history up to a step. */
import { Command } from 'commander';
import { forkRun } from '../../testing/fork.js';
import { CliUsageError, EXIT } from '../exit-codes.js';
import { json } from '../format.js';
import { noRun } from '../open-store.js';
import { out } from '../output.js';
import { AgentRegistry } from '../registry.js';
import { type Act, type Common, count, jsonOption, runIdValue, storeOption, withStore } from './shared.js';

interface ForkFlags extends Common {
  at: number;
  runId?: string;
}

/** `tollgate fork`. */
export function forkCommand(act: Act): Command {
  return new Command('fork')
    .description(
      'store a new run whose history is this run’s up to the end of a step, to take another path from there (the run itself is only read)',
    )
    .argument('<runId>')
    .requiredOption('--at <step>', 'the last step the new run keeps (0: the goal alone)', count)
    .option('--run-id <id>', 'the new run’s id (default: a fresh UUID)', runIdValue)
    .addOption(storeOption())
    .addOption(jsonOption())
    .addHelpText(
      'after',
      '\nExample:\n  $ tollgate fork ticket-42 --at 3 --run-id ticket-42-retry\n  $ tollgate resume ticket-42-retry',
    )
    .action(act(fork));
}

async function fork(runId: string, o: ForkFlags): Promise<number> {
  return withStore(o, { create: false }, async (opened) => {
    if (!(await opened.store.load(runId))) throw noRun(opened, runId);
    if (o.runId !== undefined && (await opened.store.load(o.runId))) {
      throw new CliUsageError(`there is a run ${JSON.stringify(o.runId)} already: give the fork another --run-id`);
    }
    const forked = await forkRun(opened.store, runId, { atStep: o.at, ...(o.runId ? { runId: o.runId } : {}) });
    // `tollgate resume` and `worker` run the fork with the module the original was started with.
    const registry = new AgentRegistry();
    const modulePath = registry.get(opened.location, runId);
    if (modulePath) registry.set(opened.location, forked.runId, modulePath);
    if (o.json) out(`${json({ from: runId, ...forked })}\n`);
    else
      out(
        `forked ${runId} at step ${forked.steps} into ${forked.runId} (${forked.entries} entries): tollgate resume ${forked.runId}\n`,
      );
    return EXIT.ok;
  });
}
