/**
 * What a `tools/call` answer becomes: the tool's result (a JSON value the run records), or a
 * thrown `McpToolError` for `isError: true` (an error observation). The answer is the server's,
 * hostile data: every field is read once, and nothing here trusts its shape.
 */
import { wellFormed } from '../../machines/strings.js';
import { isPlainObject } from '../json.js';
import { McpToolError } from './errors.js';

/** The longest error text taken from an `isError` answer (the run bounds its errors again). */
const MAX_ERROR_TEXT = 4_000;

/** The fields of an answer this module reads, read once (a getter could answer differently twice). */
interface Answer {
  content: unknown;
  structuredContent: unknown;
  isError: unknown;
  toolResult: unknown;
  hasToolResult: boolean;
}

function read(answer: unknown, tool: string): Answer {
  if (!isPlainObject(answer))
    throw new McpToolError(tool, 'the server answered tools/call with something that is not an object');
  const { content, structuredContent, isError, toolResult } = answer;
  return { content, structuredContent, isError, toolResult, hasToolResult: 'toolResult' in answer };
}

/** The content blocks: the text of the `text` blocks, and every other block as it came. */
function blocksOf(content: unknown): { texts: string[]; others: unknown[] } {
  const texts: string[] = [];
  const others: unknown[] = [];
  for (const block of Array.isArray(content) ? content : []) {
    if (isPlainObject(block) && block.type === 'text' && typeof block.text === 'string') texts.push(block.text);
    else others.push(block);
  }
  return { texts, others };
}

function errorText(answer: Answer): string {
  const text = blocksOf(answer.content).texts.join('\n');
  let message = text;
  if (message === '' && answer.structuredContent !== undefined) {
    try {
      message = JSON.stringify(answer.structuredContent) ?? '';
    } catch {
      message = '';
    }
  }
  if (message === '') return 'the tool reported an error and gave no text';
  return message.length > MAX_ERROR_TEXT ? `${message.slice(0, MAX_ERROR_TEXT)}…` : message;
}

/**
 * The result of a tool call:
 * - `isError: true` → throws `McpToolError` with the text of its content;
 * - `structuredContent` (an object) → that object;
 * - content of `text` blocks only → their texts joined with newlines (`''` for no content);
 * - otherwise → `{ text, content }`: the joined text, and the other blocks (images, audio,
 *   resources, links) as the server sent them.
 * A protocol 2024-10-07 answer (`toolResult`) gives its `toolResult`. The run checks that the
 * value is JSON; one that is not is an error observation, never a crash.
 */
export function resultOf(answer: unknown, tool: string): unknown {
  const reply = read(answer, tool);
  if (reply.isError === true) throw new McpToolError(tool, errorText(reply));
  if (isPlainObject(reply.structuredContent)) return reply.structuredContent;
  if (reply.hasToolResult && reply.content === undefined) return reply.toolResult;
  const { texts, others } = blocksOf(reply.content);
  // A lone surrogate cannot be in a checkpoint: it becomes U+FFFD rather than failing the call.
  const text = wellFormed(texts.join('\n'));
  return others.length === 0 ? text : { text, content: others };
}
