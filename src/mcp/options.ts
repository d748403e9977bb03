/** `mcpTools`' options, checked up front: a typo must not turn the approval gate off. */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import { z } from 'zod';
import { OptionsError } from '../errors.js';
import { showValue } from '../option-keys.js';
import { checkOptions, fn, type OptionShape, timerMs } from '../option-schema.js';
import type { McpToolProblem } from './errors.js';

/** Options of `mcpTools`. */
export interface McpToolsOptions {
  /**
   * Trust the server's annotations: `readOnlyHint: true` runs without approval, `idempotentHint:
   * true` makes a side effect idempotent. Untrusted (the default), every tool needs a human's
   * approval whatever its annotations say. @default false
   */
  trust?: boolean;
  /** Put before every tool's name (`github_`), to tell the tools of several servers apart. @default '' */
  prefix?: string;
  /**
   * With `trust`: before a read-only tool runs without approval, the server's list is read again,
   * and the call needs approval unless the tool is still listed as read-only (a tool changed since
   * `mcpTools` listed it). @default true
   */
  recheck?: boolean;
  /** Abort a call (or a listing) that takes longer than this; the tool's `timeoutMs`. @default the SDK's 60 s */
  timeoutMs?: number;
  /**
   * Checks arguments against the server's JSON Schema before approval is asked, such as
   * `new AjvJsonSchemaValidator()` from `@modelcontextprotocol/sdk/validation/ajv`. @default none:
   * any JSON object is passed on, and the server checks it
   */
  validator?: jsonSchemaValidator;
  /** Told of each invalid tool, which is then left out. @default none: `mcpTools` throws `McpToolsError` */
  onInvalidTool?: (problem: McpToolProblem) => void;
  /** Aborts the listing. */
  signal?: AbortSignal;
}

const optionsShape = {
  trust: z.boolean({ error: 'true or false' }).optional(),
  prefix: z
    .string({ error: 'at most 32 letters, digits, _ or -' })
    .regex(/^[A-Za-z0-9_-]{0,32}$/, { error: 'at most 32 letters, digits, _ or -' })
    .optional(),
  recheck: z.boolean({ error: 'true or false' }).optional(),
  timeoutMs: timerMs().optional(),
  validator: z
    .custom<jsonSchemaValidator>((v) => typeof (v as Partial<jsonSchemaValidator>)?.getValidator === 'function', {
      error: 'a jsonSchemaValidator (with a getValidator method)',
    })
    .optional(),
  onInvalidTool: fn.optional(),
  signal: z.instanceof(AbortSignal, { error: 'an AbortSignal' }).optional(),
} satisfies OptionShape<McpToolsOptions>;

/** The options with their defaults. */
export interface CheckedOptions {
  trust: boolean;
  prefix: string;
  recheck: boolean;
  timeoutMs: number | undefined;
  validator: jsonSchemaValidator | undefined;
  onInvalidTool: ((problem: McpToolProblem) => void) | undefined;
  signal: AbortSignal | undefined;
}

function fail(what: string, value: unknown): never {
  throw new OptionsError(`mcpTools: ${what}, got ${showValue(value)}`);
}

/** Checks the client and the options; throws `OptionsError` naming the one that is wrong. */
export function checkMcpOptions(client: Client, options: McpToolsOptions): CheckedOptions {
  if (client === null || typeof client !== 'object' || typeof (client as Partial<Client>).callTool !== 'function') {
    fail('client must be a connected MCP Client (@modelcontextprotocol/sdk)', client);
  }
  const {
    trust = false,
    prefix = '',
    recheck = true,
    timeoutMs,
    validator,
    onInvalidTool,
    signal,
  } = checkOptions('mcpTools', options, optionsShape);
  return { trust, prefix, recheck, timeoutMs, validator, onInvalidTool, signal };
}
