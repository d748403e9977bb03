/** `tollgate replay <runId>`: runs a stored run again from its journal and reports the first divergence. */
import { resolve } from 'node:path';
import { Command } from 'commander';
import { replayRun } from '../../testing/replay.js';
import { loadAgentModule } from '../agent-module.js';
import { EXIT } from '../exit-codes.js';
import { colorsFor, entryLine, json } from '../format.js';
import { noRun } from '../open-store.js';
import { out } from '../output.js';
import { AgentRegistry, agentPathFor } from '../registry.js';
import { type Act, type Common, jsonOption, storeOption, withStore } from './shared.js';

interface ReplayFlags extends Common {
  agent?: string;
}

/** `tollgate replay`. */
export function replayCommand(act: Act): Command {
  return new Command('replay')
    .description(
      'run a stored run again under an agent module, from its journal (no tool runs, no model is called); exit 7 where the module would do otherwise',
    )
    .argument('<runId>')
    .option('--agent <module>', 'the agent module to replay under (default: the one the run was started with)')
    .addOption(storeOption())
    .addOption(jsonOption())
    .addHelpText('after', '\nExample:\n  $ tollgate replay ticket-42 --agent ./agents/support-v2.ts')
    .action(act(replay));
}

async function replay(runId: string, o: ReplayFlags): Promise<number> {
  return withStore(o, { create: false }, async (opened) => {
    const record = await opened.store.load(runId);
    if (!record) throw noRun(opened, runId);
    const agentPath = resolve(agentPathFor(new AgentRegistry(), opened.location, runId, o.agent));
    const definition = await loadAgentModule(agentPath);
    const { status, divergence, agent } = await replayRun(record, definition);
    if (o.json) {
      out(`${json({ runId, status, divergence })}\n`);
      return divergence ? EXIT.diverged : EXIT.ok;
    }
    const c = colorsFor(process.stdout);
    if (!divergence) {
      out(`run ${runId} replays the same under ${agentPath}: ${agent.state.history.length} entries, ${status}\n`);
      return EXIT.ok;
    }
    out(`${c.red(`run ${runId} diverges under ${agentPath}`)}: ${divergence.why}\n`);
    if (divergence.recorded) out(`  recorded  ${entryLine(divergence.recorded, c)}\n`);
    if (divergence.replayed) out(`  replayed  ${entryLine(divergence.replayed, c)}\n`);
    return EXIT.diverged;
  });
}
