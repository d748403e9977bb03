/** `tollgate submit <module> <goal>`: stores a run for a worker to start; runs nothing here. */
import { resolve } from 'node:path';
import { Command } from 'commander';
import { ConflictError } from '../../errors.js';
import { submitRun } from '../../worker/submit.js';
import { loadAgentModule } from '../agent-module.js';
import { CliUsageError } from '../exit-codes.js';
import { out } from '../output.js';
import { AgentRegistry } from '../registry.js';
import {
  type Act,
  type Common,
  jsonOption,
  type LimitFlags,
  limitOptions,
  limitsOf,
  runIdValue,
  storeOption,
  systemOption,
  withStore,
  withSystem,
} from './shared.js';

interface SubmitFlags extends Common, LimitFlags {
  runId?: string;
  budgetGroup?: string;
  system?: string[];
}

/** `tollgate submit`. */
export function submitCommand(act: Act): Command {
  const cmd = new Command('submit')
    .description('store a run of an agent module for a worker to start (nothing runs here)')
    .argument('<module>', 'a file whose default export is defineAgent({...})')
    .argument('<goal>', "the user's goal")
    .addOption(systemOption())
    .addOption(storeOption())
    .option('--run-id <id>', 'the run id (default: a fresh UUID)', runIdValue)
    .option(
      '--budget-group <id>',
      'the group (tenant, user) whose budget in the store the run spends from; see docs/group-budgets.md',
    );
  limitOptions(cmd, "overrides the agent module's")
    .addOption(jsonOption())
    .addHelpText(
      'after',
      `
Example:
  $ tollgate submit ./agents/support.js "Order A-1001 arrived broken, refund it" --run-id ticket-42
  $ tollgate worker ./agents/support.js`,
    )
    .action(act(submit));
  return cmd;
}

async function submit(module: string, goal: string, o: SubmitFlags): Promise<number> {
  // The module first: a module that fails to load must not create a store.
  const modulePath = resolve(module);
  const definition = await loadAgentModule(module);
  return withStore(o, { create: true }, async (opened) => {
    let runId: string;
    try {
      runId = await submitRun(opened.store, {
        agent: definition,
        goal: withSystem(goal, o.system),
        limits: limitsOf(o),
        ...(o.runId === undefined ? {} : { runId: o.runId }),
        ...(o.budgetGroup === undefined ? {} : { budgetGroup: o.budgetGroup }),
      });
    } catch (error) {
      if (error instanceof ConflictError && o.runId !== undefined) {
        throw new CliUsageError(
          `run ${JSON.stringify(o.runId)} already exists in store ${opened.location.display}: pick another --run-id`,
        );
      }
      throw error;
    }
    new AgentRegistry().set(opened.location, runId, modulePath);
    if (o.json) out(`${JSON.stringify({ runId, agent: definition.name, status: 'running' })}\n`);
    else out(`submitted run ${runId} · agent ${definition.name} · store ${opened.location.display}\n`);
    return 0;
  });
}
