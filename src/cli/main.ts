/**
 * `tollgate`: run agents, see runs, approve from the terminal. One file per command in
 * commands/; exit codes in exit-codes.ts. Every error ends as one line on stderr (a JSON object
 * under `--json`) and an exit code.
 */
import { Command, CommanderError } from 'commander';
import { TollgateError } from '../errors.js';
import { cancelCommand } from './commands/cancel.js';
import { checkCommand } from './commands/check.js';
import { approveCommand, denyCommand } from './commands/decide.js';
import { exportCommand } from './commands/export.js';
import { forkCommand } from './commands/fork.js';
import { importCommand } from './commands/import.js';
import { machineCommand } from './commands/machine.js';
import { replayCommand } from './commands/replay.js';
import { resumeCommand } from './commands/resume.js';
import { runCommand } from './commands/run.js';
import { runsCommand } from './commands/runs.js';
import { sendCommand } from './commands/send.js';
import { serveCommand } from './commands/serve.js';
import type { Act } from './commands/shared.js';
import { showCommand } from './commands/show.js';
import { submitCommand } from './commands/submit.js';
import { workerCommand } from './commands/worker.js';
import { EXIT, exitCodeOf } from './exit-codes.js';
import { colorsFor } from './format.js';
import { programHelp } from './help.js';
import { errOut, guardOutput, out } from './output.js';
import { version } from './self.js';
import { redactLoose } from './store-location.js';

/**
 * The `tollgate` program. Each action resolves with an exit code, handed to `act`; under
 * `json`, commander prints no errors (main prints them as JSON).
 */
export function program(act: Act, options: { json?: boolean } = {}): Command {
  const cmd = new Command('tollgate')
    .description('Run tool-using agents with budgets, checkpoints and human approval.')
    .version(version(), '-V, --version', 'print the version')
    .showHelpAfterError('(tollgate <command> --help for usage)')
    .exitOverride()
    .configureOutput(
      options.json ? { writeOut: out, writeErr: () => {}, outputError: () => {} } : { writeOut: out, writeErr: errOut },
    )
    .addHelpText('after', programHelp());
  const commands = [
    runCommand,
    runsCommand,
    showCommand,
    approveCommand,
    denyCommand,
    resumeCommand,
    sendCommand,
    replayCommand,
    forkCommand,
    checkCommand,
    cancelCommand,
    exportCommand,
    importCommand,
    machineCommand,
    submitCommand,
    workerCommand,
    serveCommand,
  ];
  // copyInheritedSettings: exitOverride, the output configuration and help-after-error, as
  // `.command()` would give them.
  for (const make of commands) cmd.addCommand(make(act).copyInheritedSettings(cmd));
  return cmd;
}

/** True when `--json` is among the options (before a `--`). */
function wantsJson(argv: string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).includes('--json');
}

/** One line, never a password. */
const oneLine = (text: string) =>
  redactLoose(text)
    .replace(/\s*\n\s*/g, ' ')
    .trim();

/** Reports the error that ended a command; returns the exit code. */
function report(error: unknown, json: boolean): number {
  if (error instanceof CommanderError) {
    // --help and --version end with exit code 0; commander has printed the rest (not under --json).
    if (error.exitCode === 0) return EXIT.ok;
    if (json) {
      const message = oneLine(error.message.replace(/^error: /, ''));
      errOut(
        `${JSON.stringify({ error: { name: 'CommanderError', message, exitCode: EXIT.usage, code: error.code } })}\n`,
      );
    }
    return EXIT.usage;
  }
  const exitCode = exitCodeOf(error);
  const message = oneLine(error instanceof Error ? error.message : String(error));
  if (json) {
    const name = error instanceof Error ? error.name : 'Error';
    const run =
      error instanceof TollgateError
        ? {
            ...(error.runId === undefined ? {} : { runId: error.runId }),
            ...(error.status ? { status: error.status } : {}),
          }
        : {};
    errOut(`${JSON.stringify({ error: { name, message, exitCode, ...run } })}\n`);
  } else {
    errOut(`${colorsFor(process.stderr).red('tollgate:')} ${message}\n`);
  }
  return exitCode;
}

/** Runs the CLI; resolves with the exit code. */
export async function main(argv: string[]): Promise<number> {
  guardOutput();
  const json = wantsJson(argv);
  let exitCode: number = EXIT.ok;
  const act: Act =
    (fn) =>
    async (...args) => {
      exitCode = await fn(...args);
    };
  try {
    await program(act, { json }).parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (error) {
    return report(error, json);
  }
}
