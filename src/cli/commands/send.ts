/** `tollgate send <runId> <message>`: the next turn of a conversation, from a run that answered. */
import { resolve } from 'node:path';
import { Command } from 'commander';
import { submitMessage } from '../../worker/message.js';
import { loadAgentModule } from '../agent-module.js';
import { CliUsageError } from '../exit-codes.js';
import { noRun } from '../open-store.js';
import { out } from '../output.js';
import { AgentRegistry, agentPathFor } from '../registry.js';
import { continueOptions, continueRun, type ResumeFlags } from './resume.js';
import { type Act, limitsOf, withStore } from './shared.js';

interface SendFlags extends ResumeFlags {
  queue?: boolean;
}

/** `tollgate send`. */
export function sendCommand(act: Act): Command {
  const cmd = new Command('send')
    .description("send the user's next message to a run that answered (or that a budget stopped): a new turn")
    .argument('<runId>')
    .argument('<message>', 'the message, appended to the history as the user turn')
    .option('--queue', 'save the message only, for a worker to answer (tollgate worker); runs nothing here');
  return continueOptions(cmd)
    .addHelpText(
      'after',
      '\nExamples:\n  $ tollgate send ticket-42 "and refund the shipping too"\n  $ tollgate send ticket-42 "and the receipt?" --queue',
    )
    .action(
      act((runId: string, message: string, o: SendFlags) =>
        o.queue ? queue(runId, message, o) : continueRun(runId, o, { send: message }),
      ),
    );
}

/** `--queue`: saves the message for a worker (`submitMessage`); nothing runs, so no limits and no prompts. */
async function queue(runId: string, message: string, o: SendFlags): Promise<number> {
  if (Object.keys(limitsOf(o)).length > 0) {
    throw new CliUsageError('send --queue saves the message only: limits cannot go with it (use tollgate send)');
  }
  return withStore(o, { create: false }, async (opened) => {
    if (!(await opened.store.load(runId))) throw noRun(opened, runId);
    const agentPath = resolve(agentPathFor(new AgentRegistry(), opened.location, runId, o.agent));
    const definition = await loadAgentModule(agentPath);
    const status = await submitMessage(opened.store, { agent: definition, runId, message });
    if (o.json) out(`${JSON.stringify({ runId, status })}\n`);
    else out(`queued: the message to ${runId} · ${status} · a worker answers it (tollgate worker)\n`);
    return 0;
  });
}
