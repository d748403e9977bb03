/**
 * `tollgate machine`: the agent state machine, as Mermaid for docs, an XState config for
 * `createMachine` and Stately's editor, SCXML, or Tollgate's own JSON graph.
 */
import { Command, Option } from 'commander';
import { machineConfig, machineGraph, machineMermaid, machineScxml } from '../diagram.js';
import { EXIT } from '../exit-codes.js';
import { out } from '../output.js';
import type { Act } from './shared.js';

/** `tollgate machine`. */
export function machineCommand(act: Act): Command {
  return new Command('machine')
    .description(
      'print the agent state machine: Mermaid (docs), xstate (a createMachine config, for Stately), scxml, or json (states and edges)',
    )
    .addOption(
      new Option('--format <format>', 'output format')
        .choices(['mermaid', 'xstate', 'scxml', 'json'])
        .default('mermaid'),
    )
    .action(
      act(async (o: { format: 'mermaid' | 'xstate' | 'scxml' | 'json' }) => {
        const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
        const text = {
          mermaid: machineMermaid,
          xstate: () => json(machineConfig()),
          scxml: machineScxml,
          json: () => json(machineGraph()),
        }[o.format]();
        out(text);
        return EXIT.ok;
      }),
    );
}
