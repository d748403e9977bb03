/**
 * Stand-in until the tool-schema module lands: arguments pass as they are. (Replaced by the
 * Standard Schema validation and the JSON Schema declarations.)
 */
import type { JsonObject } from '../machines/types.js';
import type { Tool } from './types.js';

export async function validateArgs(
  _tool: Tool,
  args: JsonObject,
): Promise<{ ok: true; value: JsonObject } | { ok: false; error: string }> {
  return { ok: true, value: args };
}

export function checkToolSchema(_tool: Tool): string | null {
  return null;
}
