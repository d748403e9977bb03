/** `tollgate cancel <runId>`: cancels a run for good (exit code 0 once it is cancelled, as asked). */
import { Command } from 'commander';
import { drive } from '../drive.js';
import { EXIT } from '../exit-codes.js';
import { type Act, approver, type Common, INERT, jsonOption, loadAgent, storeOption, withStore } from './shared.js';

/** `tollgate cancel`. */
export function cancelCommand(act: Act): Command {
  return new Command('cancel')
    .description('cancel a run: it ends as cancelled and never runs again (exit code 0; 2 if it had ended)')
    .argument('<runId>')
    .option('--reason <text>', 'why (recorded in the run)', '')
    .addOption(storeOption())
    .addOption(jsonOption())
    .addHelpText('after', '\nExample:\n  $ tollgate cancel ticket-42 --reason "customer withdrew the request"')
    .action(
      act(async (runId: string, o: Common & { reason: string }) =>
        // No agent module: cancelling runs nothing, so the run is loaded with an inert policy and no tools.
        withStore(o, { create: false }, async (opened) => {
          const agent = await loadAgent(opened, runId, INERT);
          const code = await drive(agent, () => agent.cancel(o.reason), {
            json: o.json === true,
            interactive: false,
            by: approver(undefined),
            decideLater: () => [],
          });
          // Cancelled is what was asked: success, so that `tollgate cancel r1 && …` goes on.
          return code === EXIT.cancelled ? EXIT.ok : code;
        }),
      ),
    );
}
