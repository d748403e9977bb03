/**
 * The summariser actor: asks the `compaction.summarize` function for a summary of the older turns,
 * with its own timeout and the active-time deadline, and reads what comes back. It never throws
 * for what the summariser does: a throw, a timeout or an unusable answer is a `failed` outcome,
 * and the run goes on with the uncompacted view. It is not retried here (no back-off loop): the
 * machine tries again only once the history has grown (machines/agent-machine.ts).
 */
import { MAX_SUMMARY_LENGTH, nextCover } from '../../machines/compaction.js';
import { describeError } from '../../machines/describe-error.js';
import type { PolicyInput } from '../../machines/events.js';
import { wellFormed } from '../../machines/strings.js';
import type { SummaryOutcome } from '../../machines/types.js';
import { isoTime } from '../clock.js';
import { isPlainObject, safeString } from '../json.js';
import { earliest, TimeoutError, withDeadline } from './deadline.js';
import { activeLeft } from './limits.js';
import { type ActorPorts, portsOf } from './ports.js';
import { type Charge, chargedFields, chargeOf, type Reservation, reserve } from './reserve.js';
import { unwrap } from './returned.js';
import { fromTask } from './task-actor.js';

/** What the summariser's answer is, read once: the text (or why there is none) and its usage. */
interface Read {
  text: string | null;
  why: string;
  usage: unknown;
  reported: boolean;
}

function shown(value: unknown): string {
  const s = safeString(value);
  return s.length > 60 ? `${s.slice(0, 60)}…` : s;
}

/** Reads a summariser's answer: a string, or `{ text, usage? }`. Never throws. */
export function readSummary(raw: unknown): Read {
  try {
    if (typeof raw === 'string') return check(raw, undefined, false);
    if (isPlainObject(raw)) {
      const { text, usage } = raw;
      if (typeof text !== 'string') {
        return {
          text: null,
          why: `summarize returned text ${shown(text)}, not a string`,
          usage,
          reported: usage !== undefined,
        };
      }
      return check(text, usage, usage !== undefined);
    }
    return {
      text: null,
      why: `summarize returned ${shown(raw)}, not a string or { text, usage? }`,
      usage: undefined,
      reported: false,
    };
  } catch (error) {
    return {
      text: null,
      why: `the summary could not be read: ${describeError(error)}`,
      usage: undefined,
      reported: false,
    };
  }
}

/** A text as a run keeps it: not blank, well-formed, and at most `MAX_SUMMARY_LENGTH` characters. */
function check(text: string, usage: unknown, reported: boolean): Read {
  if (text.trim() === '') return { text: null, why: 'summarize returned an empty summary', usage, reported };
  const cut =
    text.length > MAX_SUMMARY_LENGTH
      ? `${text.slice(0, MAX_SUMMARY_LENGTH)}… (${text.length - MAX_SUMMARY_LENGTH} more characters cut)`
      : text;
  return { text: wellFormed(cut), why: '', usage, reported };
}

/** The charge of a summary, as a policy call's: a summary that reports no usage is estimated, and has an unknown cost. */
function summaryCharge(read: Read, run: ActorPorts, r: Reservation): Charge {
  const output = Math.max(1, Math.ceil((read.text ?? '').length / 4));
  const charge = chargeOf(read.reported ? read.usage : undefined, read.reported, run.price, r, output, run.remaining());
  return read.reported ? charge : { ...charge, cost: { unknown: 'the summariser reported no usage' } };
}

export const summaryActor = fromTask<SummaryOutcome, PolicyInput>(async ({ input, abort, system }) => {
  const run = portsOf(system);
  const compaction = run.compaction;
  // The range is read off the journal as it stands: a resumed run asks for the same one again.
  const cover = compaction === null ? null : nextCover(run.history(), compaction.keep);
  if (compaction === null || cover === null) return { type: 'skipped' };
  await run.beforeCall(false);
  if (abort.aborted) throw abort.signal.reason;
  // What the summary may spend, held as a policy call's is: one that does not fit is not paid for,
  // and the run stops for it (as the policy call would).
  const shape = { request: cover.entries, requestTokens: 0, maxOutputTokens: null, minOutputTokens: 1, model: null };
  const reservation = await reserve(run, shape, abort);
  if ('budget' in reservation) return { type: 'exhausted', budget: reservation.budget, why: reservation.why };
  const started = run.clock.now();
  const spent = () => Math.max(0, run.clock.now() - started);
  const remaining = run.remaining();
  const left = () => earliest(compaction.timeoutMs - spent(), activeLeft(run.remaining(), spent()));
  let read: Read;
  try {
    const { value } = await withDeadline(
      ({ signal: callSignal }) =>
        unwrap(
          compaction.summarize(cover.entries.slice(), {
            runId: input.runId,
            step: input.step,
            signal: callSignal,
            remaining: { ...remaining },
            maxOutputTokens: reservation.maxOutputTokens,
            covers: { ...cover.covers },
          }),
        ),
      left,
      abort,
      run.clock,
      () =>
        new TimeoutError(
          (activeLeft(run.remaining(), spent()) ?? 1) > 0
            ? `summary timed out after ${compaction.timeoutMs} ms`
            : 'summary stopped: the active-time budget (maxActiveMs) ran out',
        ),
    );
    read = readSummary(value);
  } catch (error) {
    // Nothing is known of what it spent: charged nothing, as a failed policy call is.
    if (reservation.group !== null) await run.group()?.giveBack();
    // Cancelled: the machine has left this state; nothing is recorded.
    if (abort.aborted) throw error;
    const now = run.clock.now();
    return { type: 'failed', error: describeError(error), usage: null, elapsedMs: spent(), at: isoTime(now) };
  }
  const charge = summaryCharge(read, run, reservation);
  // Spent by the group too, as a policy call's usage is (kept for the next hold if the store fails).
  await run.group()?.settle(charge.tokens, charge.cost);
  const at = isoTime(run.clock.now());
  const elapsedMs = spent();
  const charged = chargedFields(charge);
  if (read.text === null) return { type: 'failed', error: wellFormed(`Error: ${read.why}`), ...charged, elapsedMs, at };
  return { type: 'summary', text: read.text, covers: cover.covers, ...charged, elapsedMs, at };
});
