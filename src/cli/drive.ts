/**
 * Drives a run in the terminal: shows each step live (decision, call, result, budgets) with a
 * spinner while the policy or a tool works, and, when the run pauses for approval, asks the
 * human at a terminal or prints the command that decides later.
 */
import { input, select } from '@inquirer/prompts';
import yoctoSpinner from 'yocto-spinner';
import { headLength } from '../../machines/compaction.js';
import type { PendingCall, Status } from '../../machines/types.js';
import type { Agent } from '../agent.js';
import { LiveDeltas } from './deltas.js';
import { exitFor } from './exit-codes.js';
import {
  budgetLine,
  type Colors,
  colorsFor,
  entryLine,
  json,
  pendingLines,
  statusText,
  terminalSafe,
} from './format.js';
import { out } from './output.js';

export interface DriveOptions {
  /** Print one JSON object at the end instead of live lines. */
  json: boolean;
  /** Ask at the terminal when the run needs approval (stdin and stdout must be terminals). */
  interactive: boolean;
  /** The name recorded as the approver for decisions made at the prompt. */
  by: string;
  /** The lines that decide the pending call `callId` later, from another shell (later.ts). */
  decideLater: (callId: string) => string[];
}

/**
 * Shows the run's progress until `work` settles; returns a function that stops showing. At a
 * terminal a streaming model's text and tool-call pieces are written as they arrive (a `model`
 * line); piped, the output keeps one line per history entry.
 */
function show(agent: Agent, c: Colors, live: boolean): () => void {
  const spinner = live && process.stderr.isTTY ? yoctoSpinner({ stream: process.stderr, handleSignals: false }) : null;
  const deltas = live && process.stdout.isTTY ? new LiveDeltas(out, c) : null;
  // The run's head never changes once it started: read once (agent.state copies the history).
  let head: number | undefined;
  const stop = agent.observe((event) => {
    if (event.type !== 'delta') deltas?.end();
    if (event.type === 'entry') {
      spinner?.stop();
      head ??= headLength(agent.state.history);
      out(`${entryLine(event.entry, c, event.index, head)}\n`);
      if (event.entry.role === 'assistant') out(`${c.dim(`          ${budgetLine(agent.state)}`)}\n`);
    } else if (event.type === 'deciding') {
      spinner?.start(`policy deciding step ${event.step}`);
    } else if (event.type === 'executing') {
      spinner?.start(`running ${event.call.tool} (${event.call.key})`);
    } else if (event.type === 'delta') {
      // A streaming model's progress: written as it arrives at a terminal (the spinner, on the
      // same screen, stops first), else shown on the spinner; the final action prints as an entry.
      if (deltas) {
        spinner?.stop();
        deltas.delta(event.delta);
      } else if (spinner && event.delta.kind === 'call' && event.delta.tool) {
        spinner.text = `model calls ${terminalSafe(event.delta.tool)}…`;
      } else if (spinner && event.delta.kind === 'text') {
        spinner.text = `model: ${terminalSafe(event.delta.text.slice(-60))}`;
      }
    } else if (event.type === 'compaction') {
      // A failed summary leaves the run going: said once, in the log, not as an entry.
      if (event.compaction.error !== null) {
        spinner?.stop();
        out(
          `${c.dim(`          summary failed (${event.compaction.failures} in a row): ${terminalSafe(event.compaction.error)}`)}\n`,
        );
      }
    } else if (event.status !== 'running') {
      spinner?.stop();
    }
  });
  return () => {
    spinner?.stop();
    deltas?.end();
    stop();
  };
}

/** Runs `work` (start, run, decide…) and everything after it; returns the exit code. */
export async function drive(agent: Agent, work: () => Promise<Status>, options: DriveOptions): Promise<number> {
  const c = colorsFor(process.stdout);
  const live = !options.json;
  let status: Status;
  for (let next = work; ; ) {
    const hide = live ? show(agent, c, live) : () => {};
    try {
      status = await next();
    } finally {
      hide();
    }
    if (status !== 'awaiting_approval' || !options.interactive || options.json) break;
    const decision = await ask(agent, c, options.by);
    if (decision === null) break;
    next = () => agent.decide(decision.approved, decision.note, { callId: decision.callId, by: options.by });
  }
  const state = agent.state;
  if (options.json) {
    out(
      `${json({ runId: state.runId, status, steps: state.steps, answer: state.answer, pending: state.pending, pendingCalls: state.pendingCalls, usage: state.usage, stoppedBy: state.stoppedBy, error: state.error, cancelReason: state.cancelReason })}\n`,
    );
    return exitFor(status);
  }
  out(`${c.bold('status')}    ${statusText(status, c)}   ${c.dim(budgetLine(state))}\n`);
  if (status === 'awaiting_approval') {
    // Every undecided call of the step, each with the commands that decide it.
    for (const pending of state.pendingCalls) {
      for (const line of pendingLines(pending, c)) out(`${line}\n`);
      out(
        `decide later with:\n${options
          .decideLater(pending.id)
          .map((line) => `  ${line}\n`)
          .join('')}`,
      );
    }
  }
  if (status === 'budget_exhausted') out(`stopped by the ${state.stoppedBy} budget\n`);
  if (status === 'failed') out(`${c.red(state.error ?? 'failed')}\n`);
  if (status === 'cancelled') out(`cancelled${state.cancelReason ? `: ${state.cancelReason}` : ''}\n`);
  return exitFor(status);
}

/** Asks approve / deny / later at the terminal. Null: decide later. */
async function ask(agent: Agent, c: Colors, by: string) {
  const pending = agent.state.pending;
  if (!pending) return null;
  for (const line of pendingLines(pending, c)) out(`${line}\n`);
  try {
    return await prompt(pending, by);
  } catch (error) {
    // Ctrl-C or a closed terminal at the prompt: nothing is decided; the run keeps waiting.
    if ((error as Error).name === 'ExitPromptError') return null;
    throw error;
  }
}

async function prompt(pending: PendingCall, by: string) {
  const choice = await select({
    message: `Run ${pending.tool}?`,
    choices: [
      { name: 'approve', value: 'approve' },
      { name: 'deny', value: 'deny' },
      { name: 'decide later', value: 'later' },
    ],
  });
  if (choice === 'later') return null;
  const approved = choice === 'approve';
  const note = await input({
    message: approved ? `note (as ${by})` : `why deny? (as ${by})`,
    // As `tollgate deny` requires --note: the model is told why, so a denial needs a reason.
    validate: (text) => approved || text.trim() !== '' || 'a denial needs a reason: the model is told why',
  });
  return { approved, note, callId: pending.id };
}
