/** `tollgate send <runId> <message>`: the next turn of a conversation, from a run that answered. */
import { Command } from 'commander';
import { continueOptions, continueRun, type ResumeFlags } from './resume.js';
import type { Act } from './shared.js';

/** `tollgate send`. */
export function sendCommand(act: Act): Command {
  const cmd = new Command('send')
    .description("send the user's next message to a run that answered (or that a budget stopped): a new turn")
    .argument('<runId>')
    .argument('<message>', 'the message, appended to the history as the user turn');
  return continueOptions(cmd)
    .addHelpText('after', '\nExample:\n  $ tollgate send ticket-42 "and refund the shipping too"')
    .action(act((runId: string, message: string, o: ResumeFlags) => continueRun(runId, o, { send: message })));
}
