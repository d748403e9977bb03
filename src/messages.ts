/**
 * What a run starts from: a goal string, or a conversation (system instructions, earlier turns,
 * the user's message the run acts on). Checked here, before the machine sees it: the machine's
 * `START` event carries only checked messages.
 */
import { z } from 'zod';
import type { AgentEvent, Message } from '../machines/types.js';
import { type ErrorDetails, OptionsError } from './errors.js';
import { showValue } from './option-keys.js';
import { text, valueAt } from './option-schema.js';

/** The most messages a run may start from (a longer conversation is summarised or cut first). */
export const MAX_START_MESSAGES = 10_000;

const messageSchema = z.strictObject(
  {
    role: z.enum(['system', 'user', 'assistant'], { error: "'system', 'user' or 'assistant'" }),
    content: text('a string'),
  },
  { error: 'an object { role, content }' },
);

/** Why the messages cannot start a run, or null: the order a model API needs. */
function orderProblem(messages: readonly Message[]): string | null {
  const first = messages.findIndex((m) => m.role !== 'system');
  if (first < 0) return 'messages need a user message after the system messages';
  const late = messages.findIndex((m, i) => i > first && m.role === 'system');
  if (late >= 0)
    return `messages[${late}] is a system message after the conversation began: system messages come first`;
  if (messages.at(-1)?.role !== 'user') return 'messages must end with a user message (the run acts on it)';
  return null;
}

/**
 * The `START` event of a goal (a string) or a conversation (an array of `{ role, content }`):
 * system messages first, then earlier turns, the last one the user's.
 * @throws OptionsError naming the first problem (the run is not started).
 */
export function startEvent(
  call: string,
  goal: unknown,
  details: ErrorDetails = {},
): Extract<AgentEvent, { type: 'START' }> {
  if (typeof goal === 'string') {
    const result = text('a string').safeParse(goal);
    if (!result.success) {
      throw new OptionsError(
        `${call}: goal must be ${result.error.issues[0]?.message}, got ${showValue(goal)}`,
        details,
      );
    }
    return { type: 'START', goal: result.data };
  }
  if (!Array.isArray(goal)) {
    throw new OptionsError(`${call}: goal must be a string or an array of messages, got ${showValue(goal)}`, details);
  }
  if (goal.length === 0 || goal.length > MAX_START_MESSAGES) {
    throw new OptionsError(
      `${call}: messages must hold 1 to ${MAX_START_MESSAGES} messages, got ${goal.length}`,
      details,
    );
  }
  const messages: Message[] = [];
  for (const [i, message] of goal.entries()) {
    const result = messageSchema.safeParse(message);
    if (!result.success) {
      const issue = result.error.issues[0];
      const where = issue?.path.length ? `messages[${i}].${issue.path.join('.')}` : `messages[${i}]`;
      throw new OptionsError(
        `${call}: ${where} must be ${issue?.message}, got ${showValue(valueAt(message, issue?.path ?? []))}`,
        details,
      );
    }
    messages.push(result.data);
  }
  const problem = orderProblem(messages);
  if (problem) throw new OptionsError(`${call}: ${problem}`, details);
  return { type: 'START', messages };
}
