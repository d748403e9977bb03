/**
 * A run as the AI SDK's UI message stream, the protocol `useChat` reads: the policy's text and
 * reasoning as they stream, each tool call with its input and then its output (or error, or
 * denial), and each call waiting for a human as a tool approval request. The front end's answers
 * come back in the chat's messages; `decisionsFrom` reads them as `decide` takes them, and
 * `chatTurn` does a whole request. No runtime import of `ai`: the chunks are plain objects of the
 * protocol's shapes.
 */
import { keyOf } from '../../machines/calls.js';
import type { HistoryEntry, Json } from '../../machines/types.js';
import { OptionsError, RunStateError, UserError } from '../errors.js';
import { isPlainObject } from '../json.js';
import type { CallDecisionInput, Decisions, RunEvent, RunState, Status } from '../types.js';

/** The chunks of the UI message stream this module writes (a subset of `ai`'s `UIMessageChunk`). */
export type TollgateUIChunk =
  | { type: 'start'; messageId?: string }
  | { type: 'start-step' }
  | { type: 'finish-step' }
  | { type: 'text-start'; id: string }
  | { type: 'text-delta'; id: string; delta: string }
  | { type: 'text-end'; id: string }
  | { type: 'reasoning-start'; id: string }
  | { type: 'reasoning-delta'; id: string; delta: string }
  | { type: 'reasoning-end'; id: string }
  | { type: 'tool-input-available'; toolCallId: string; toolName: string; input: unknown }
  | { type: 'tool-approval-request'; approvalId: string; toolCallId: string }
  | { type: 'tool-output-available'; toolCallId: string; output: unknown }
  | { type: 'tool-output-error'; toolCallId: string; errorText: string }
  | { type: 'tool-output-denied'; toolCallId: string }
  | { type: 'error'; errorText: string }
  | { type: 'finish'; finishReason?: 'stop' | 'tool-calls' | 'error' | 'other' };

/** What the stream reads of a run; an `Agent` is one. */
export interface ObservedRun {
  readonly runId: string;
  readonly state: Pick<RunState, 'runId' | 'history' | 'steps' | 'pendingCalls'>;
  observe(listener: (event: RunEvent) => void): () => void;
}

/** Options of `toUIMessageStream`. */
export interface UIMessageStreamOptions {
  /** The id of the assistant message the stream starts; leave it out when continuing one (after approvals). */
  messageId?: string | undefined;
  /**
   * What an error becomes in the stream: the browser sees it. @default a Tollgate `UserError`'s
   * message (a stale approval, a run in the wrong state), else "An error occurred." (an error of
   * the store or of a tool may name what the browser should not see)
   */
  onError?: ((error: unknown) => string) | undefined;
}

/** The keys of the calls of the run's last step that have no outcome yet, in call order. */
function openCalls(agent: ObservedRun): string[] {
  const { history, steps, runId } = agent.state;
  let last = -1;
  for (let i = history.length - 1; i >= 0; i--) {
    const entry = history[i] as HistoryEntry;
    if (entry.role === 'assistant' && ('tool' in entry || 'calls' in entry)) {
      last = i;
      break;
    }
  }
  if (last < 0) return [];
  const entry = history[last] as HistoryEntry & { calls?: unknown[] };
  const count = Array.isArray(entry.calls) ? entry.calls.length : 1;
  const answered = history.slice(last + 1).filter((e) => e.role === 'tool').length;
  return Array.from({ length: count }, (_, i) => keyOf(runId, steps, i, count)).slice(answered);
}

/** A denial's error text, as the runtime writes it for a human's or a rule's no. */
const DENIED = /^denied by (human|rule)\b/;

/**
 * The run as a UI message stream: subscribes to `agent`, calls `drive` (what moves the run on:
 * `() => agent.start(goal)`, `() => agent.decide(decisionsFrom(messages))`, `() =>
 * agent.send(text)`), writes what happens as chunks, and ends when `drive` settles: with an
 * approval request for each call then waiting (its `approvalId` is the pending call's id, its
 * `toolCallId` the call's idempotency key), then `finish`. A rejected `drive` ends the stream with
 * an `error` chunk. A reader that goes away (the browser closed the page) stops the stream, not
 * the run. Hand it to `ai`'s `createUIMessageStreamResponse({ stream })`; `chatTurn` picks the
 * drive from a chat request.
 *
 * @example
 * const stream = toUIMessageStream(agent, () => agent.decide(decisionsFrom(messages)));
 * return createUIMessageStreamResponse({ stream });
 */
export function toUIMessageStream(
  agent: ObservedRun,
  drive: () => Promise<Status>,
  options: UIMessageStreamOptions = {},
): ReadableStream<TollgateUIChunk> {
  if (typeof drive !== 'function')
    throw new OptionsError('toUIMessageStream: drive must be a function that moves the run on');
  const errorText =
    options.onError ?? ((error: unknown) => (error instanceof UserError ? error.message : 'An error occurred.'));
  const textOf = (error: unknown) => {
    try {
      const text = errorText(error);
      return typeof text === 'string' ? text : 'An error occurred.';
    } catch {
      return 'An error occurred.';
    }
  };
  /** Set when the reader cancels: nothing more is written, and the run is no longer observed. */
  let gone: (() => void) | null = null;
  let cancelled = false;
  return new ReadableStream<TollgateUIChunk>({
    cancel() {
      cancelled = true;
      gone?.();
    },
    start(controller) {
      const write = (chunk: TollgateUIChunk) => {
        if (!cancelled) controller.enqueue(chunk);
      };
      /** Keys of the calls whose outcome is still to come, in the order their entries will come. */
      const open = openCalls(agent);
      const { runId } = agent;
      let step = agent.state.steps;
      let inStep = false;
      let textId: string | null = null;
      let reasoningId: string | null = null;
      /** Parts are numbered: a step can say text, reason, then say more. */
      let parts = 0;
      const startStep = () => {
        if (!inStep) write({ type: 'start-step' });
        inStep = true;
      };
      const endReasoning = () => {
        if (reasoningId !== null) write({ type: 'reasoning-end', id: reasoningId });
        reasoningId = null;
      };
      const endText = () => {
        if (textId !== null) write({ type: 'text-end', id: textId });
        textId = null;
      };
      const endStep = () => {
        endReasoning();
        endText();
        if (inStep) write({ type: 'finish-step' });
        inStep = false;
      };
      const reasoning = (delta: string) => {
        endText();
        if (reasoningId === null) {
          reasoningId = `reasoning-${runId}-${step}-${parts++}`;
          write({ type: 'reasoning-start', id: reasoningId });
        }
        write({ type: 'reasoning-delta', id: reasoningId, delta });
      };
      const text = (delta: string) => {
        if (delta === '') return;
        endReasoning();
        if (textId === null) {
          textId = `text-${runId}-${step}-${parts++}`;
          write({ type: 'text-start', id: textId });
        }
        write({ type: 'text-delta', id: textId, delta });
      };
      let streamed = false;
      const onEvent = (event: RunEvent) => {
        if (event.type === 'deciding') {
          endStep();
          step = event.step;
          streamed = false;
          startStep();
        } else if (event.type === 'delta' && event.delta.kind !== 'call') {
          // A policy may stream anything: only text goes to the browser.
          const piece: unknown = event.delta.text;
          if (typeof piece !== 'string' || piece === '') return;
          if (event.delta.kind === 'text') {
            streamed = true;
            text(piece);
          } else if (event.delta.kind === 'reasoning') reasoning(piece);
        } else if (event.type === 'entry') entry(event.entry);
      };
      const entry = (e: HistoryEntry) => {
        if (e.role === 'assistant' && 'final' in e) {
          startStep();
          if (!streamed) text(typeof e.final === 'string' ? e.final : JSON.stringify(e.final));
          endStep();
        } else if (e.role === 'assistant' && ('tool' in e || 'calls' in e)) {
          startStep();
          if (!streamed && typeof e.text === 'string') text(e.text);
          endReasoning();
          endText();
          const calls = 'calls' in e ? e.calls : [{ tool: e.tool, args: e.args }];
          calls.forEach((call, i) => {
            const toolCallId = keyOf(runId, step, i, calls.length);
            open.push(toolCallId);
            write({ type: 'tool-input-available', toolCallId, toolName: call.tool, input: call.args });
          });
        } else if (e.role === 'tool') {
          const toolCallId = open.shift();
          if (toolCallId === undefined) return;
          if ('result' in e) write({ type: 'tool-output-available', toolCallId, output: e.result as Json });
          else if (DENIED.test(e.error)) write({ type: 'tool-output-denied', toolCallId });
          else write({ type: 'tool-output-error', toolCallId, errorText: e.error });
        }
      };
      write(options.messageId === undefined ? { type: 'start' } : { type: 'start', messageId: options.messageId });
      const stop = agent.observe(onEvent);
      gone = stop;
      const finish = (status: Status | null, error?: unknown) => {
        stop();
        if (cancelled) return;
        if (error !== undefined) write({ type: 'error', errorText: textOf(error) });
        if (status === 'awaiting_approval') {
          startStep();
          for (const pending of agent.state.pendingCalls) {
            write({ type: 'tool-approval-request', approvalId: pending.id, toolCallId: pending.key });
          }
        }
        endStep();
        const finishReason =
          error !== undefined
            ? 'error'
            : status === 'awaiting_approval'
              ? 'tool-calls'
              : status === 'done'
                ? 'stop'
                : 'other';
        write({ type: 'finish', finishReason });
        controller.close();
      };
      let driving: Promise<Status>;
      try {
        driving = Promise.resolve(drive());
      } catch (error) {
        driving = Promise.reject(error);
      }
      driving.then(
        (status) => finish(status),
        (error) => finish(null, error ?? new Error('drive failed')),
      );
    },
  });
}

/** The longest note taken from a front end's approval answer. */
const MAX_NOTE_LENGTH = 2_000;

/**
 * The decisions in a chat's messages, as `decide` takes them: each tool part of the last assistant
 * message answered in the front end (`addToolApprovalResponse`: state `approval-responded`,
 * `approval: { id, approved, reason }`). Only `approved: true` approves; the reason is the note.
 * The messages come from the browser: anything of another shape is passed over, and `decide`
 * still checks every id against the calls actually waiting (a stale or unknown id changes nothing).
 */
export function decisionsFrom(messages: unknown): Decisions {
  // A Map, then own properties: an id such as "__proto__" is a key like any other.
  const decisions = new Map<string, CallDecisionInput>();
  if (!Array.isArray(messages)) return {};
  const last = [...messages].reverse().find((m) => isPlainObject(m) && m.role === 'assistant');
  if (!isPlainObject(last) || !Array.isArray(last.parts)) return {};
  for (const part of last.parts) {
    if (!isPlainObject(part) || part.state !== 'approval-responded' || !isPlainObject(part.approval)) continue;
    const { id, approved, reason } = part.approval;
    if (typeof id !== 'string' || id === '' || decisions.has(id)) continue;
    const note = typeof reason === 'string' && reason !== '' ? { note: reason.slice(0, MAX_NOTE_LENGTH) } : {};
    decisions.set(id, approved === true ? { approve: true, ...note } : { approve: false, ...note });
  }
  return Object.fromEntries(decisions);
}

/** The longest chat id `chatTurn` takes (it is the run's id). */
const MAX_CHAT_ID_LENGTH = 200;

/** Options of `chatTurn`: where a chat's run comes from. */
export interface ChatTurnOptions<Run extends ChatRun> {
  /** The chat's run, or null when the chat has none yet (`Agent.load`, or a lookup). */
  load(chatId: string): Promise<Run | null> | Run | null;
  /** A new run for a chat that has none; its run id should be the chat id. */
  create(chatId: string): Promise<Run> | Run;
  /** Passed to `toUIMessageStream`. */
  stream?: UIMessageStreamOptions | undefined;
}

/** What `chatTurn` needs of a run; an `Agent` is one. */
export interface ChatRun extends ObservedRun {
  readonly state: ObservedRun['state'] & Pick<RunState, 'status'>;
  start(goal: string): Promise<Status>;
  send(message: string): Promise<Status>;
  decide(decisions: Decisions): Promise<Status>;
}

/** The text of the chat's last message when it is the user's, else null. */
function userText(messages: unknown[]): string | null {
  const last = messages.at(-1);
  if (!isPlainObject(last) || last.role !== 'user' || !Array.isArray(last.parts)) return null;
  const text = last.parts
    .flatMap((p) => (isPlainObject(p) && p.type === 'text' && typeof p.text === 'string' ? [p.text] : []))
    .join('');
  return text.trim() === '' ? null : text;
}

/**
 * One request of a `useChat` front end (its JSON body, `{ id, messages }`), as the run's UI message
 * stream: the chat's first message starts its run (`create`, then `start`); answers to approvals
 * go to `decide`; a new message after an answer goes on with `send`. The chat id is the run id.
 * Throws `OptionsError` for a body of another shape, and `RunStateError` for a request that does
 * not fit the run's status (a new message while calls wait for a human, answers with nothing
 * waiting): nothing of the run changes then. Hand the stream to `createUIMessageStreamResponse`.
 *
 * @example
 * export async function POST(request: Request) {
 *   const stream = await chatTurn(await request.json(), {
 *     load: (id) => Agent.load(store, id, options).catch((e) => (e instanceof RunNotFoundError ? null : Promise.reject(e))),
 *     create: (id) => new Agent({ ...options, runId: id, store }),
 *   });
 *   return createUIMessageStreamResponse({ stream });
 * }
 */
export async function chatTurn<Run extends ChatRun>(
  body: unknown,
  options: ChatTurnOptions<Run>,
): Promise<ReadableStream<TollgateUIChunk>> {
  if (!isPlainObject(body) || !Array.isArray(body.messages)) {
    throw new OptionsError('chatTurn: the request body must be a chat request, { id, messages: [...] }');
  }
  const { id, messages } = body;
  if (typeof id !== 'string' || id === '' || id.length > MAX_CHAT_ID_LENGTH) {
    throw new OptionsError(`chatTurn: the chat id must be a string of 1 to ${MAX_CHAT_ID_LENGTH} characters`);
  }
  const text = userText(messages);
  const existing = await options.load(id);
  if (existing === null) {
    if (text === null) throw new OptionsError('chatTurn: a new chat starts with a message of the user’s, with text');
    const run = await options.create(id);
    return toUIMessageStream(run, () => run.start(text), options.stream);
  }
  const status = existing.state.status;
  const decisions = decisionsFrom(messages);
  if (Object.keys(decisions).length > 0) {
    if (status !== 'awaiting_approval') {
      throw new RunStateError(`chatTurn: chat ${JSON.stringify(id)} answers approvals, but its run is ${status}`, [
        'awaiting_approval',
      ]);
    }
    return toUIMessageStream(existing, () => existing.decide(decisions), options.stream);
  }
  if (text === null)
    throw new OptionsError('chatTurn: the request carries neither a user’s message nor an answer to an approval');
  if (status !== 'done' && status !== 'budget_exhausted') {
    throw new RunStateError(`chatTurn: chat ${JSON.stringify(id)} cannot take a message while its run is ${status}`, [
      'done',
      'budget_exhausted',
    ]);
  }
  return toUIMessageStream(existing, () => existing.send(text), options.stream);
}
