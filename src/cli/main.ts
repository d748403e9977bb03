/**
 * `tollgate`: run agents, see runs, approve from the terminal. Exit codes: exit-codes.ts.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { STATUSES } from '../../machines/types.js';
import { Agent } from '../agent.js';
import { decodeCheckpoint } from '../checkpoint.js';
import { ConflictError, RunNotFoundError, UserError } from '../errors.js';
import { type CheckpointStore, entryOf, headOf, joinRun } from '../store.js';
import { AgentRegistry, agentPathFor, loadAgentModule, openStore, storeSpec } from './context.js';
import { machineGraph, machineMermaid } from './diagram.js';
import { drive, laterCommand } from './drive.js';
import { CliUsageError, EXIT } from './exit-codes.js';
import { budgetLine, colorsFor, entryLine, json, pendingLines, statusText } from './format.js';

const count = (value: string) => {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw new InvalidArgumentError('expected a whole number ≥ 0');
  return n;
};

const defaultApprover = () => process.env.TOLLGATE_USER ?? safeUser();
function safeUser(): string {
  try {
    return userInfo().username;
  } catch {
    return 'human';
  }
}

interface Common {
  store?: string;
  json?: boolean;
}

/** Opens the store for one command and always closes it. */
async function withStore<T>(options: Common, work: (store: CheckpointStore, spec: string) => Promise<T>): Promise<T> {
  const spec = storeSpec(options.store);
  const store = await openStore(spec);
  try {
    return await work(store, spec);
  } finally {
    await store.close();
  }
}

async function loadState(store: CheckpointStore, runId: string) {
  const record = await store.load(runId);
  if (!record) throw new RunNotFoundError(`no run ${JSON.stringify(runId)} in this store`, { runId });
  const blob = joinRun(record.head, record.entries);
  const state = Agent.resume(blob, { policy: () => ({ final: null }), tools: [] }).state;
  return { record, blob, state };
}

let exitCode: number = EXIT.ok;
/** Wraps an action so that the exit code it returns becomes the process's. */
const act =
  <A extends unknown[]>(fn: (...args: A) => Promise<number>) =>
  async (...args: A): Promise<void> => {
    exitCode = await fn(...args);
  };

const interactive = () => process.stdin.isTTY === true && process.stdout.isTTY === true;

async function decideCommand(
  runId: string,
  approved: boolean,
  o: Common & { note?: string; as?: string; agent?: string; callId?: string; input?: boolean },
) {
  return withStore(o, async (store, spec) => {
    const registry = new AgentRegistry();
    const agentPath = agentPathFor(registry, spec, runId, o.agent);
    const definition = await loadAgentModule(agentPath);
    const agent = await Agent.load(store, runId, definition);
    const by = o.as ?? defaultApprover();
    return drive(agent, () => agent.decide(approved, o.note ?? '', { by, ...(o.callId ? { callId: o.callId } : {}) }), {
      json: o.json === true,
      interactive: o.input !== false && interactive(),
      by,
      decideLater: laterCommand(runId, spec, agentPath),
    });
  });
}

export function program(): Command {
  const cmd = new Command('tollgate')
    .description('Run tool-using agents with budgets, checkpoints and human approval.')
    .showHelpAfterError('(tollgate <command> --help for usage)')
    .exitOverride();
  const storeOption = () =>
    new Option('--store <path|url>', 'SQLite file or postgres:// URL (env TOLLGATE_STORE)').default(
      undefined,
      './tollgate.db',
    );
  const jsonOption = () => new Option('--json', 'print JSON for scripts');

  cmd
    .command('run')
    .description('start a run of an agent module and show it live; ask for approvals at a terminal')
    .argument('<module>', 'a file whose default export is defineAgent({...})')
    .argument('<goal>', "the user's goal")
    .addOption(storeOption())
    .option('--max-steps <n>', 'step budget (overrides the agent module)', count)
    .option('--run-id <id>', 'the run id (default: a fresh UUID)')
    .option('--as <name>', 'approver name for decisions made at the prompt')
    .option('--no-input', 'never prompt; print the command to decide later')
    .addOption(jsonOption())
    .action(
      act(async (module: string, goal: string, o) =>
        withStore(o, async (store, spec) => {
          const definition = await loadAgentModule(module);
          const agent = new Agent({
            ...definition,
            store,
            ...(o.maxSteps !== undefined ? { maxSteps: o.maxSteps } : {}),
            ...(o.runId ? { runId: o.runId } : {}),
          });
          new AgentRegistry().set(spec, agent.runId, module);
          if (!o.json) process.stdout.write(`run ${agent.runId} · agent ${definition.name} · store ${spec}\n`);
          const by = o.as ?? defaultApprover();
          return drive(agent, () => agent.start(goal), {
            json: o.json === true,
            interactive: o.input !== false && interactive(),
            by,
            decideLater: laterCommand(agent.runId, spec, module),
          });
        }),
      ),
    );

  cmd
    .command('runs')
    .description('list runs (the approval inbox: --status awaiting_approval)')
    .addOption(new Option('--status <status>', 'only runs in this status').choices([...STATUSES]))
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(
      act(async (o) =>
        withStore(o, async (store) => {
          const runs = await store.list(o.status ? { status: o.status } : {});
          if (o.json) {
            process.stdout.write(`${json(runs)}\n`);
            return EXIT.ok;
          }
          const c = colorsFor(process.stdout);
          if (runs.length === 0) process.stdout.write('no runs\n');
          for (const r of runs) {
            const pending = r.pending ? `  ${r.pending.tool} ${json(r.pending.args)}` : '';
            process.stdout.write(`${r.runId}  ${statusText(r.status, c)}  v${r.version}  ${r.updatedAt}${pending}\n`);
          }
          return EXIT.ok;
        }),
      ),
    );

  cmd
    .command('show')
    .description('show a run: its history, pending call and budgets')
    .argument('<runId>')
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(
      act(async (runId: string, o) =>
        withStore(o, async (store) => {
          const { record, state } = await loadState(store, runId);
          if (o.json) {
            process.stdout.write(`${json({ ...state, version: record.version, updatedAt: record.updatedAt })}\n`);
            return EXIT.ok;
          }
          const c = colorsFor(process.stdout);
          process.stdout.write(
            `run ${state.runId} · ${statusText(state.status, c)} · v${record.version} · ${record.updatedAt}\n`,
          );
          process.stdout.write(`${budgetLine(state)}${state.stoppedBy ? ` · stopped by ${state.stoppedBy}` : ''}\n`);
          for (const entry of state.history) process.stdout.write(`${entryLine(entry, c)}\n`);
          if (state.pending) for (const line of pendingLines(state.pending, c)) process.stdout.write(`${line}\n`);
          if (state.error) process.stdout.write(`${c.red(`error: ${state.error}`)}\n`);
          return EXIT.ok;
        }),
      ),
    );

  cmd
    .command('approve')
    .description('approve the pending call of a run and continue it')
    .argument('<runId>')
    .option('--note <text>', 'why', '')
    .option('--as <name>', 'who approves (default: $TOLLGATE_USER or the OS user)')
    .option('--call-id <id>', 'the pending call id you reviewed: refuses a stale approval')
    .option('--agent <module>', 'the agent module (default: the one the run was started with)')
    .option('--no-input', 'never prompt for later approvals')
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(act(async (runId: string, o) => decideCommand(runId, true, o)));

  cmd
    .command('deny')
    .description('deny the pending call of a run; the model is told why')
    .argument('<runId>')
    .requiredOption('--note <text>', 'why (the model sees it)')
    .option('--as <name>', 'who denies (default: $TOLLGATE_USER or the OS user)')
    .option('--call-id <id>', 'the pending call id you reviewed: refuses a stale decision')
    .option('--agent <module>', 'the agent module (default: the one the run was started with)')
    .option('--no-input', 'never prompt for later approvals')
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(act(async (runId: string, o) => decideCommand(runId, false, o)));

  cmd
    .command('resume')
    .description('continue a run (after a crash, a failure, or with a raised budget)')
    .argument('<runId>')
    .requiredOption('--agent <module>', 'the agent module')
    .option('--max-steps <n>', 'raise (or lower) the step budget', count)
    .option('--as <name>', 'approver name for decisions made at the prompt')
    .option('--no-input', 'never prompt; print the command to decide later')
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(
      act(async (runId: string, o) =>
        withStore(o, async (store, spec) => {
          const definition = await loadAgentModule(o.agent);
          const agent = await Agent.load(store, runId, {
            ...definition,
            ...(o.maxSteps !== undefined ? { maxSteps: o.maxSteps } : {}),
          });
          new AgentRegistry().set(spec, runId, o.agent);
          const by = o.as ?? defaultApprover();
          return drive(agent, () => agent.run(), {
            json: o.json === true,
            interactive: o.input !== false && interactive(),
            by,
            decideLater: laterCommand(runId, spec, o.agent),
          });
        }),
      ),
    );

  cmd
    .command('export')
    .description('write a run as a checkpoint (canonical JSON)')
    .argument('<runId>')
    .option('-o, --output <file>', 'write to a file instead of stdout')
    .addOption(storeOption())
    .action(
      act(async (runId: string, o) =>
        withStore(o, async (store) => {
          const { blob } = await loadState(store, runId);
          if (o.output) writeFileSync(o.output, blob);
          else process.stdout.write(`${blob}\n`);
          return EXIT.ok;
        }),
      ),
    );

  cmd
    .command('import')
    .description('add a run from a checkpoint file to the store')
    .argument('<file>', 'a checkpoint written by export or agent.checkpoint()')
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(
      act(async (file: string, o) => {
        let text: string;
        try {
          text = readFileSync(file, 'utf8');
        } catch (error) {
          throw new CliUsageError(`cannot read ${file}: ${(error as Error).message}`);
        }
        const run = decodeCheckpoint(text.trim());
        return withStore(o, async (store) => {
          const { runId } = run.context;
          const write = {
            status: Agent.resume(text.trim(), { policy: () => ({ final: null }), tools: [] }).status,
            head: headOf(run),
            from: 0,
            append: run.context.history.map(entryOf),
            pending: run.context.pending,
          };
          try {
            await store.save(runId, write, 0);
          } catch (error) {
            if (error instanceof ConflictError)
              throw new CliUsageError(`run ${runId} is already in the store; nothing imported`);
            throw error;
          }
          process.stdout.write(
            o.json ? `${json({ runId, status: write.status })}\n` : `imported run ${runId} (${write.status})\n`,
          );
          return EXIT.ok;
        });
      }),
    );

  cmd
    .command('machine')
    .description('print the agent state machine (Mermaid for docs, JSON for tools)')
    .addOption(new Option('--format <format>', 'output format').choices(['mermaid', 'json']).default('mermaid'))
    .action(
      act(async (o) => {
        process.stdout.write(o.format === 'json' ? `${JSON.stringify(machineGraph(), null, 2)}\n` : machineMermaid());
        return EXIT.ok;
      }),
    );

  return cmd;
}

/** Runs the CLI; resolves with the exit code. One clear line on stderr for any error. */
export async function main(argv: string[]): Promise<number> {
  exitCode = EXIT.ok;
  try {
    await program().parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help exits 0; everything else commander rejects is a usage error (already printed).
      return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    const c = colorsFor(process.stderr);
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`${c.red('tollgate:')} ${message}\n`);
    return error instanceof UserError || error instanceof CliUsageError ? EXIT.usage : EXIT.error;
  }
}
