/** `tollgate run <module> <goal>`: starts a run and shows it live; asks for approvals at a terminal. */
import { resolve } from 'node:path';
import { Command } from 'commander';
import { Agent } from '../../agent.js';
import { agentOptionsOf } from '../../define.js';
import { ConflictError } from '../../errors.js';
import { loadAgentModule } from '../agent-module.js';
import { drive } from '../drive.js';
import { CliUsageError } from '../exit-codes.js';
import { laterCommands } from '../later.js';
import type { OpenedStore } from '../open-store.js';
import { out } from '../output.js';
import { AgentRegistry } from '../registry.js';
import {
  type Act,
  approver,
  type Common,
  canAsk,
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

interface RunFlags extends Common, LimitFlags {
  runId?: string;
  budgetGroup?: string;
  as?: string;
  input?: boolean;
  system?: string[];
}

const taken = (runId: string, opened: OpenedStore) =>
  new CliUsageError(
    `run ${JSON.stringify(runId)} already exists in store ${opened.location.display}: pick another --run-id, or continue it with tollgate resume`,
  );

/** `tollgate run`. */
export function runCommand(act: Act): Command {
  const cmd = new Command('run')
    .description('start a run of an agent module and show it live; ask for approvals at a terminal')
    .argument('<module>', 'a file whose default export is defineAgent({...}): .js/.mjs, or .ts with tsx installed')
    .argument('<goal>', "the user's goal")
    .addOption(systemOption())
    .addOption(storeOption())
    .option('--run-id <id>', 'the run id (default: a fresh UUID)', runIdValue)
    .option(
      '--budget-group <id>',
      'the group (tenant, user) whose budget in the store the run spends from; see docs/group-budgets.md',
    );
  limitOptions(cmd, "overrides the agent module's")
    .option('--as <name>', 'approver name for decisions made at the prompt')
    .option('--no-input', 'never prompt; print the commands to decide later')
    .addOption(jsonOption())
    .addHelpText(
      'after',
      `
Examples:
  $ tollgate run ./agents/support.js "Order A-1001 arrived broken, refund it" --run-id ticket-42
  $ tollgate run ./agents/support.ts "…" --max-steps 4 --no-input --json
  $ tollgate run ./agents/support.js "Where is my refund?" --system "You answer for the refunds desk."`,
    )
    .action(act(start));
  return cmd;
}

async function start(module: string, goal: string, o: RunFlags): Promise<number> {
  // The module first: a module that fails to load must not create a store.
  const modulePath = resolve(module);
  const definition = await loadAgentModule(module);
  return withStore(o, { create: true }, async (opened) => {
    if (o.runId !== undefined && (await opened.store.load(o.runId))) throw taken(o.runId, opened);
    const agent = new Agent({
      ...agentOptionsOf(definition),
      ...limitsOf(o),
      store: opened.store,
      ...(o.runId === undefined ? {} : { runId: o.runId }),
      ...(o.budgetGroup === undefined ? {} : { budgetGroup: o.budgetGroup }),
    });
    // The registry names the run's module only once the run exists (its first save): a run id
    // someone else holds must never be re-pointed at this module.
    const registry = new AgentRegistry();
    let registered = false;
    const register = () => {
      if (registered || (agent.version ?? 0) === 0) return;
      registry.set(opened.location, agent.runId, modulePath);
      registered = true;
    };
    const stop = agent.observe(register);
    if (!o.json) out(`run ${agent.runId} · agent ${definition.name} · store ${opened.location.display}\n`);
    const by = approver(o.as);
    try {
      return await drive(
        agent,
        async () => {
          try {
            return await agent.start(withSystem(goal, o.system));
          } catch (error) {
            if (error instanceof ConflictError) throw taken(agent.runId, opened);
            throw error;
          } finally {
            register();
          }
        },
        {
          json: o.json === true,
          interactive: canAsk(o),
          by,
          decideLater: (callId) => laterCommands(agent.runId, callId, opened.location, modulePath),
        },
      );
    } finally {
      stop();
      register();
    }
  });
}
