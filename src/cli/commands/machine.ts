/** `tollgate machine`: the agent state machine, as Mermaid for docs or JSON for tools. */
import { Command, Option } from 'commander';
import { machineGraph, machineMermaid } from '../diagram.js';
import { EXIT } from '../exit-codes.js';
import { out } from '../output.js';
import type { Act } from './shared.js';

/** `tollgate machine`. */
export function machineCommand(act: Act): Command {
  return new Command('machine')
    .description('print the agent state machine (Mermaid for docs, JSON for tools)')
    .addOption(new Option('--format <format>', 'output format').choices(['mermaid', 'json']).default('mermaid'))
    .action(
      act(async (o: { format: 'mermaid' | 'json' }) => {
        out(o.format === 'json' ? `${JSON.stringify(machineGraph(), null, 2)}\n` : machineMermaid());
        return EXIT.ok;
      }),
    );
}
