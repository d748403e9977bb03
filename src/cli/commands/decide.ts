/** `tollgate approve|deny <runId>`: decides a run's pending call and continues the run. */
import { resolve } from 'node:path';
import { Command } from 'commander';
import { ConflictError } from '../../errors.js';
import { recordDecision } from '../../worker/record.js';
import { loadAgentModule } from '../agent-module.js';
import { drive } from '../drive.js';
import { CliUsageError } from '../exit-codes.js';
import { laterCommands } from '../later.js';
import { noRun } from '../open-store.js';
import { out } from '../output.js';
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

interface DecideFlags extends Common, LimitFlags {
  note?: string;
  as?: string;
  agent?: string;
  callId?: string;
  input?: boolean;
  queue?: boolean;
}

function decideCommand(act: Act, approved: boolean): Command {
  const name = approved ? 'approve' : 'deny';
  const cmd = new Command(name)
    .description(
      approved
        ? 'approve the pending call of a run and continue it'
        : 'deny the pending call of a run; the model is told why, nothing runs',
    )
    .argument('<runId>');
  if (approved) cmd.option('--note <text>', 'why', '');
  else cmd.requiredOption('--note <text>', 'why (the model sees it)');
  cmd
    .option('--as <name>', `who ${approved ? 'approves' : 'denies'} (default: $TOLLGATE_USER or the OS user)`)
    .option('--call-id <id>', 'the pending call id you reviewed: refuses a stale decision')
    .option('--agent <module>', 'the agent module (default: the one the run was started with)')
    .option('--queue', 'record the decision only, for a worker to apply (tollgate worker); runs nothing here');
  limitOptions(cmd, "replaces the run's, saved with the decision")
    .option('--no-input', 'never prompt for later approvals')
    .addOption(storeOption())
    .addOption(jsonOption())
    .addHelpText(
      'after',
      approved
        ? `\nExample:\n  $ tollgate approve ticket-42 --call-id 'ticket-42:2#1@86a2a281216a0046d647d0bb5da7f245' --note "receipt checked" --as carol`
        : `\nExample:\n  $ tollgate deny ticket-42 --call-id 'ticket-42:2#1@86a2a281216a0046d647d0bb5da7f245' --note "refunds over $100 need a manager"`,
    )
    .action(act((runId: string, o: DecideFlags) => decide(runId, approved, o)));
  return cmd;
}

/** `tollgate approve`. */
export const approveCommand = (act: Act) => decideCommand(act, true);
/** `tollgate deny`. */
export const denyCommand = (act: Act) => decideCommand(act, false);

async function decide(runId: string, approved: boolean, o: DecideFlags): Promise<number> {
  const note = o.note ?? '';
  if (!approved && note.trim() === '') throw new CliUsageError('deny: --note must say why (the model is told)');
  if (o.queue) return record(runId, approved, note, o);
  // Only runs are read: a failing decision must not create a store.
  return withStore(o, { create: false }, async (opened) => {
    if (!(await opened.store.load(runId))) throw noRun(opened, runId);
    const agentPath = resolve(agentPathFor(new AgentRegistry(), opened.location, runId, o.agent));
    const definition = await loadAgentModule(agentPath);
    const agent = await loadAgent(opened, runId, definition, limitsOf(o));
    const by = approver(o.as);
    const callId = o.callId === undefined ? {} : { callId: o.callId };
    return drive(agent, () => agent.decide(approved, note, { by, ...callId }), {
      json: o.json === true,
      interactive: canAsk(o),
      by,
      decideLater: (pendingId) => laterCommands(runId, pendingId, opened.location, agentPath),
    });
  });
}

/** `--queue`: records the decision for a worker; nothing runs, so no limits and no prompts. */
async function record(runId: string, approved: boolean, note: string, o: DecideFlags): Promise<number> {
  const name = approved ? 'approve' : 'deny';
  if (Object.keys(limitsOf(o)).length > 0) {
    throw new CliUsageError(`${name} --queue records a decision only: limits cannot go with it (use tollgate resume)`);
  }
  return withStore(o, { create: false }, async (opened) => {
    if (!(await opened.store.load(runId))) throw noRun(opened, runId);
    // The module, when known, checks the decision as the worker will (its clock, its tools).
    const known = o.agent ?? new AgentRegistry().get(opened.location, runId);
    const definition = known === undefined ? undefined : await loadAgentModule(resolve(known));
    const by = approver(o.as);
    const recorded = await recordDecision(opened.store, runId, approved, {
      by,
      note,
      ...(o.callId === undefined ? {} : { callId: o.callId }),
      ...(definition === undefined ? {} : { agent: definition }),
    }).catch((error: unknown) => {
      // Another decision came first (or the run moved on): a stale decision, the caller's to review.
      if (error instanceof ConflictError) throw new CliUsageError(error.message);
      throw error;
    });
    const [callId] = Object.keys(recorded.decisions);
    if (o.json) out(`${JSON.stringify({ runId, recorded })}\n`);
    else out(`recorded: ${name} ${callId} by ${by} · a worker applies it (tollgate worker)\n`);
    return 0;
  });
}
