/** `tollgate resume <runId>`: continues a run after a crash, a failure, or with new limits. */
import { resolve } from 'node:path';
import { Command } from 'commander';
import { loadAgentModule } from '../agent-module.js';
import { drive } from '../drive.js';
import { CliUsageError } from '../exit-codes.js';
import { laterCommands } from '../later.js';
import { noRun } from '../open-store.js';
import { AgentRegistry, agentPathFor } from '../registry.js';
import {
  type Act,
  approver,
  type Common,
  canAsk,
  jsonOption,
  type LimitFlags,
  limitOptions,
  limitsOf,
  loadAgent,
  storeOption,
  withStore,
} from './shared.js';

export interface ResumeFlags extends Common, LimitFlags {
  agent?: string;
  as?: string;
  input?: boolean;
}

/** `tollgate resume`. */
export function resumeCommand(act: Act): Command {
  const cmd = new Command('resume')
    .description('continue a run (after a crash, a failure, or with a raised budget)')
    .argument('<runId>');
  return continueOptions(cmd)
    .addHelpText('after', '\nExample:\n  $ tollgate resume ticket-42 --max-steps 12')
    .action(act(resumeRun));
}

/** The options of a command that continues a stored run (`resume`, `send`): `ResumeFlags`. */
export function continueOptions(cmd: Command): Command {
  cmd.option('--agent <module>', 'the agent module (default: the one the run was started with)');
  return limitOptions(cmd, "replaces the run's; the run keeps its own when not given")
    .option('--as <name>', 'approver name for decisions made at the prompt')
    .option('--no-input', 'never prompt; print the commands to decide later')
    .addOption(storeOption())
    .addOption(jsonOption());
}

async function resumeRun(runId: string, o: ResumeFlags): Promise<number> {
  return continueRun(runId, o, 'resume');
}

/**
 * Loads a stored run with its agent module (the one it was started with, or `--agent`) and the
 * limits given, then works it: `run()` for `resume`, `send(message)` for `send`, to its rest.
 */
export async function continueRun(runId: string, o: ResumeFlags, how: 'resume' | { send: string }): Promise<number> {
  return withStore(o, { create: false }, async (opened) => {
    if (!(await opened.store.load(runId))) throw noRun(opened, runId);
    const registry = new AgentRegistry();
    const agentPath = resolve(agentPathFor(registry, opened.location, runId, o.agent));
    const definition = await loadAgentModule(agentPath);
    const limits = limitsOf(o);
    const agent = await loadAgent(opened, runId, definition, limits);
    const status = agent.status;
    // New limits are saved by the work that follows; a run that waits for a human or has ended
    // does no work here, so they would be silently dropped.
    const changed = Object.keys(limits).length > 0;
    if (changed && how === 'resume' && status === 'awaiting_approval') {
      throw new CliUsageError(
        `run ${runId} is awaiting approval: give the new limits to tollgate approve or deny, which save them with the decision`,
      );
    }
    if (changed && how === 'resume' && status === 'done') {
      throw new CliUsageError(`run ${runId} is done: give the new limits to tollgate send, with the next message`);
    }
    if (changed && status === 'cancelled')
      throw new CliUsageError(`run ${runId} is cancelled: its limits cannot change`);
    if (o.agent !== undefined) registry.set(opened.location, runId, agentPath);
    const by = approver(o.as);
    return drive(agent, () => (how === 'resume' ? agent.run() : agent.send(how.send)), {
      json: o.json === true,
      interactive: canAsk(o),
      by,
      decideLater: (callId) => laterCommands(runId, callId, opened.location, agentPath),
    });
  });
}
