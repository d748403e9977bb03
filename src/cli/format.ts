/**
 * How the CLI shows runs: one line per history entry, the pending call, budgets. Colours come
 * from picocolors and are off when output is not a terminal or NO_COLOR is set. What a model or
 * tool wrote is hostile input: it never reaches the terminal with its control characters.
 */
import pc from 'picocolors';
import { wellFormed } from '../../machines/strings.js';
import type { HistoryEntry, PendingCall } from '../../machines/types.js';
import type { RunState } from '../types.js';

/** picocolors' functions, on or off. */
export type Colors = ReturnType<typeof pc.createColors>;

/** Colours for a stream: on only for a terminal, never with NO_COLOR (FORCE_COLOR forces). */
export function colorsFor(stream: NodeJS.WriteStream): Colors {
  const env = process.env;
  const enabled = 'FORCE_COLOR' in env ? env.FORCE_COLOR !== '0' : !('NO_COLOR' in env) && stream.isTTY === true;
  return pc.createColors(enabled);
}

/** Indent of a continued line, under the text after the 10-character labels (`model     `). */
const INDENT = ' '.repeat(10);

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it escapes
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** `text` as a terminal may show it: escapes for control and direction characters, lines indented. */
export function terminalSafe(text: unknown): string {
  if (typeof text !== 'string') return '';
  return wellFormed(text)
    .replace(UNSAFE, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`)
    .replace(/\n/g, `\n${INDENT}`);
}

const MAX = 160;
/** A model's or tool's text as a line shows it: cut, and safe for a terminal. */
function clip(text: string): string {
  return terminalSafe(text.length > MAX ? `${text.slice(0, MAX - 1)}…` : text);
}

/** Compact JSON, one line. */
export function json(value: unknown): string {
  return JSON.stringify(value);
}

/**
 * One readable line for a history entry. `index`: its place, and `head`: how many entries the
 * run's head holds (`headLength`): a user entry in the head is the goal, one after it a message.
 */
export function entryLine(entry: HistoryEntry, c: Colors, index = 0, head = 1): string {
  if (entry.role === 'system') return `${c.dim('system')}    ${clip(entry.content)}`;
  if (entry.role === 'user')
    return `${c.bold(index < head ? 'goal' : 'message')}${index < head ? '      ' : '   '}${clip(entry.content)}`;
  if (entry.role === 'assistant') {
    if ('content' in entry) return `${c.green('reply')}     ${clip(entry.content)}`;
    if ('final' in entry)
      return `${c.green('answer')}    ${clip(typeof entry.final === 'string' ? entry.final : json(entry.final))}`;
    if ('calls' in entry) {
      return entry.calls
        .map((call) => `${c.cyan('call')}      ${clip(call.tool)} ${c.dim(clip(json(call.args)))}`)
        .join('\n');
    }
    return `${c.cyan('call')}      ${clip(entry.tool)} ${c.dim(clip(json(entry.args)))}`;
  }
  if (entry.role === 'summary') {
    return `${c.dim('summary')}   ${c.dim(`(entries ${entry.covers.from}–${entry.covers.to})`)} ${clip(entry.text)}`;
  }
  // An approver's edit is part of the record: the call ran with these arguments, not the model's.
  const edited = entry.approval?.args ? `, arguments edited to ${clip(json(entry.approval.args))}` : '';
  const by = entry.approval
    ? c.dim(` (${entry.approval.approved ? 'approved' : 'denied'} by ${entry.approval.by}${edited})`)
    : '';
  if ('error' in entry) return `${c.red('error')}     ${clip(entry.tool)}: ${clip(entry.error)}${by}`;
  return `${c.blue('result')}    ${clip(entry.tool)} ${c.dim(clip(json(entry.result)))}${by}`;
}

/** The pending call, as a human must see it before deciding. */
export function pendingLines(p: PendingCall, c: Colors): string[] {
  return [
    c.yellow(c.bold('approval needed')),
    `  tool      ${c.bold(p.tool)}`,
    `  args      ${json(p.args)}`,
    `  key       ${p.key}`,
    `  call id   ${p.id}${p.attempt > 1 ? c.dim(` (asked ${p.attempt} times)`) : ''}`,
    `  requested ${p.requestedAt}`,
    `  expires   ${p.expiresAt ?? 'never'}`,
    ...(p.outcome === 'unknown'
      ? [c.red('  outcome   UNKNOWN: this call was in flight at a crash; check before approving it again')]
      : []),
  ];
}

/** Steps, tokens, active time and US dollars used against their limits. */
export function budgetLine(s: RunState): string {
  const tokens = s.usage.inputTokens + s.usage.outputTokens;
  const of = (limit: number | null, unit = '') => (limit === null ? '' : `/${unit}${limit}`);
  return `steps ${s.steps}/${s.limits.maxSteps} · tokens ${tokens}${of(s.limits.maxTokens)} · active ${Math.round(s.activeMs)}${of(s.limits.maxActiveMs)} ms · cost $${s.usage.costUsd}${of(s.limits.maxCostUsd, '$')}`;
}

/** A status in its colour: green done, yellow waiting, cyan working, red stopped. */
export function statusText(status: string, c: Colors): string {
  if (status === 'done') return c.green(status);
  if (status === 'awaiting_approval') return c.yellow(status);
  if (status === 'running' || status === 'idle') return c.cyan(status);
  return c.red(status);
}
