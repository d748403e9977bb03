/**
 * Tools' argument schemas: any Standard Schema v1 value (zod 4, valibot, arktype). Checking a
 * tool's `input` up front (`checkToolSchema`), validating a call's arguments before approval is
 * asked and before the call runs (`validateArgs`), and typing a tool from its schema
 * (`defineTool`). Describing the tools to a model is tool-declarations.ts.
 *
 * The arguments come from the model: attacker data (prompt injection). The schema gets a copy of
 * them, never the one the history keeps; whatever it returns must be plain JSON; a schema that
 * throws, hangs past the signal or answers nonsense fails closed: nothing runs. Every text made
 * here is bounded and well-formed, because it ends up in the checkpoint as an observation.
 */
import type { StandardSchemaV1 } from '@standard-schema/spec';
import { describeError } from '../machines/describe-error.js';
import { wellFormed } from '../machines/strings.js';
import type { JsonObject } from '../machines/types.js';
import { OptionsError } from './errors.js';
import { isPlainObject, toJson } from './json.js';
import { showValue } from './option-keys.js';
import type { Tool } from './types.js';

/** Issues an `invalid arguments` observation lists before it says how many more there are. */
export const MAX_ISSUES_SHOWN = 10;

/** The longest text `validateArgs` returns as an error (a model's arguments can be huge). */
export const MAX_ARGS_ERROR_LENGTH = 4_000;

/** One issue's message is cut at this many characters (valibot quotes the value it got). */
const MAX_MESSAGE = 200;

/** Path segments an issue names before it elides the middle of a deep path, and a key's length. */
const MAX_PATH_SHOWN = 8;
const MAX_KEY = 60;

/** `validateArgs`' answer: the schema's output (what the tool gets), or why nothing may run. */
export type ArgsCheck = { ok: true; value: JsonObject } | { ok: false; error: string };

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

type Standard =
  | { ok: true; props: StandardSchemaV1.Props; validate: StandardSchemaV1.Props['validate'] }
  | { ok: false; why: string };

/** Reads `value['~standard']` once and checks that it is a Standard Schema v1. */
function readStandard(value: unknown): Standard {
  // An arktype type is a function with `~standard`; zod and valibot schemas are objects.
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) {
    return { ok: false, why: `got ${showValue(value)}` };
  }
  try {
    const props = (value as { '~standard'?: unknown })['~standard'];
    if (props === null || typeof props !== 'object') return { ok: false, why: 'it has no "~standard" object' };
    const { version, validate } = props as { version?: unknown; validate?: unknown };
    if (version !== 1) return { ok: false, why: `its "~standard".version is ${showValue(version)}, not 1` };
    if (typeof validate !== 'function') return { ok: false, why: 'its "~standard".validate is not a function' };
    // The very function checked is the one called (a getter could answer differently twice).
    return {
      ok: true,
      props: props as StandardSchemaV1.Props,
      validate: validate as StandardSchemaV1.Props['validate'],
    };
  } catch (error) {
    return { ok: false, why: `it could not be read (${describeError(error)})` };
  }
}

/**
 * Checks a tool's `input` up front: absent, or a Standard Schema v1 value (`~standard.version`
 * is 1 and `~standard.validate` a function). Returns what is wrong, or null. Never throws.
 *
 * @example
 * const problem = checkToolSchema(tool);
 * if (problem) throw new OptionsError(`new Agent: tools[${i}] (${JSON.stringify(tool.name)}): ${problem}`);
 */
export function checkToolSchema(tool: Pick<Tool, 'input'>): string | null {
  let input: unknown;
  try {
    input = tool.input;
  } catch (error) {
    return `input could not be read (${describeError(error)})`;
  }
  if (input === undefined) return null;
  const standard = readStandard(input);
  return standard.ok ? null : `input must be a Standard Schema v1 value (zod 4, valibot, arktype…): ${standard.why}`;
}

/** A key as a path segment: `name` first, then `.name`, `[2]`, `["odd key"]`. */
function segment(raw: unknown, first: boolean): string {
  // A Standard Schema path holds keys, or segments `{ key }` (valibot).
  const key = raw !== null && typeof raw === 'object' ? (raw as { key?: unknown }).key : raw;
  if (typeof key === 'number') return `[${key}]`;
  if (typeof key === 'string') {
    if (/^[A-Za-z_$][\w$]*$/.test(key) && key.length <= MAX_KEY) return first ? key : `.${key}`;
    return `[${JSON.stringify(clip(key, MAX_KEY))}]`;
  }
  return typeof key === 'symbol' ? `[${clip(String(key), MAX_KEY)}]` : '[?]';
}

/** `items[2].qty`; a deep path keeps its first and last segments: `a.b.c.d.e…[7].x.y`. */
function pathText(path: unknown): string {
  if (!Array.isArray(path)) return '';
  const length = path.length;
  const shown = (i: number) => segment(path[i], i === 0);
  if (length <= MAX_PATH_SHOWN) return Array.from({ length }, (_, i) => shown(i)).join('');
  const head = Array.from({ length: MAX_PATH_SHOWN - 3 }, (_, i) => shown(i)).join('');
  const tail = [length - 3, length - 2, length - 1].map(shown).join('');
  return `${head}…${tail}`;
}

function issueText(issue: unknown): string {
  try {
    const { message, path } = issue as StandardSchemaV1.Issue;
    const text = clip(typeof message === 'string' ? message : `(no message: ${showValue(message)})`, MAX_MESSAGE);
    const where = pathText(path);
    return where === '' ? text : `${where}: ${text}`;
  } catch (error) {
    return `(an issue that could not be read: ${clip(describeError(error), MAX_MESSAGE)})`;
  }
}

function fail(error: string): ArgsCheck {
  const bounded =
    error.length > MAX_ARGS_ERROR_LENGTH
      ? `${error.slice(0, MAX_ARGS_ERROR_LENGTH)}… (${error.length - MAX_ARGS_ERROR_LENGTH} more characters)`
      : error;
  return { ok: false, error: wellFormed(bounded) };
}

function issuesError(issues: unknown): ArgsCheck {
  try {
    if (!Array.isArray(issues)) return fail(`argument schema failed: its issues are ${showValue(issues)}, not a list`);
    const count = issues.length;
    if (count === 0) return fail('invalid arguments (the schema gave no reason)');
    const shown = Array.from({ length: Math.min(count, MAX_ISSUES_SHOWN) }, (_, i) => issueText(issues[i]));
    const more = count > MAX_ISSUES_SHOWN ? `; and ${count - MAX_ISSUES_SHOWN} more` : '';
    return fail(`invalid arguments: ${shown.join('; ')}${more}`);
  } catch (error) {
    // A Proxy for a list: Array.isArray, length or an index can throw.
    return fail(`argument schema failed: its issues could not be read (${describeError(error)})`);
  }
}

/** Reads a validate result once: its issues, or its output copied as a plain JSON object. */
function readResult(result: unknown): ArgsCheck {
  let issues: unknown;
  let value: unknown;
  try {
    if (result === null || typeof result !== 'object') {
      return fail(`argument schema failed: validate returned ${showValue(result)}, not a result`);
    }
    ({ issues, value } = result as { issues?: unknown; value?: unknown });
  } catch (error) {
    return fail(`argument schema failed: its result could not be read (${describeError(error)})`);
  }
  // Standard Schema: a falsy `issues` means success.
  if (issues) return issuesError(issues);
  const output = toJson(value, 'output');
  if (!output.ok) return fail(`argument schema's output is not JSON: ${output.reason}`);
  if (!isPlainObject(output.value)) {
    return fail(`argument schema's output must be an object, got ${showValue(output.value)}`);
  }
  return { ok: true, value: output.value as JsonObject };
}

/**
 * What a validation stopped by its signal rejects with. Recognised by identity: `instanceof` on
 * what a schema throws can itself throw (a revoked Proxy).
 */
const ABORTED = Symbol('aborted');

/** `value`, or a rejection with `ABORTED` as soon as `signal` aborts, whichever comes first. */
function untilAborted<T>(value: T | PromiseLike<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return Promise.resolve(value);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(ABORTED);
    signal.addEventListener('abort', onAbort, { once: true });
    Promise.resolve(value).then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/**
 * Validates a call's arguments against its tool's `input` schema, sync or async. With no schema,
 * the arguments are returned as they are. Otherwise the schema validates a copy of them, and:
 * issues become `invalid arguments: <path>: <message>; …` (at most `MAX_ISSUES_SHOWN` issues,
 * then `and N more`); an output that is not a plain JSON object (a transform into a `Date`),
 * a schema that is not a Standard Schema, that throws, rejects or answers a malformed result, and
 * an aborted `signal`, are errors too: nothing may run. The error is at most
 * `MAX_ARGS_ERROR_LENGTH` characters and well-formed. Never throws.
 *
 * @example
 * const check = await validateArgs(tool, args, { signal });
 * if (!check.ok) return { error: check.error }; // an observation; nobody is asked, nothing runs
 * await tool.fn(check.value, key, ctx);          // the schema's output
 */
export async function validateArgs(
  tool: Pick<Tool, 'input'>,
  args: JsonObject,
  options: { signal?: AbortSignal | undefined } = {},
): Promise<ArgsCheck> {
  let input: unknown;
  try {
    input = tool.input;
  } catch (error) {
    return fail(`argument schema could not be read: ${describeError(error)}`);
  }
  if (input === undefined) return { ok: true, value: args };
  const standard = readStandard(input);
  if (!standard.ok) return fail(`argument schema is not a Standard Schema v1 value: ${standard.why}`);
  // The schema gets a copy: one that changes its input must not change the arguments the history keeps.
  const copy = toJson(args, 'args');
  if (!copy.ok) return fail(`invalid arguments: ${copy.reason}`);
  const { signal } = options;
  let result: unknown;
  try {
    if (signal?.aborted) throw ABORTED;
    result = await untilAborted(standard.validate.call(standard.props, copy.value), signal);
  } catch (error) {
    if (error === ABORTED) return fail('argument validation was aborted');
    return fail(`argument schema failed: ${describeError(error)}`);
  }
  return readResult(result);
}

/**
 * Declares a tool with its types inferred: its name as a literal type, and its arguments from its
 * `input` schema (`fn` and `needsApproval` get the schema's output; a typed policy writes its
 * input) or, without a schema, from `fn`'s parameter. A policy typed with such tools
 * (`Policy<typeof tools>`) cannot misspell a tool's name or give it arguments of the wrong shape.
 * At run time it returns `tool` itself, after checking that its `input` is a Standard Schema
 * (`OptionsError` otherwise).
 *
 * @example
 * const sendEmail = defineTool({
 *   name: 'send_email',
 *   input: z.object({ to: z.email(), body: z.string() }),
 *   sideEffect: true,
 *   fn: async ({ to, body }, key) => mailer.send({ to, body, idempotencyKey: key }), // typed
 * });
 * const search = defineTool({ name: 'search', fn: async ({ q }: { q: string }) => index.find(q) });
 * const tools = [sendEmail, search];
 * const policy: Policy<typeof tools> = () => ({ tool: 'search', args: { q: 'refunds' } });
 */
export function defineTool<const Name extends string, Schema extends StandardSchemaV1>(
  tool: { name: Name; input: Schema } & Omit<
    Tool<StandardSchemaV1.InferOutput<Schema>, Name, StandardSchemaV1.InferInput<Schema>>,
    'name' | 'input'
  >,
): Tool<StandardSchemaV1.InferOutput<Schema>, Name, StandardSchemaV1.InferInput<Schema>>;
export function defineTool<const Name extends string, Args = JsonObject>(
  tool: Tool<Args, Name> & { input?: undefined },
): Tool<Args, Name>;
export function defineTool(tool: Tool): Tool {
  const problem = checkToolSchema(tool);
  if (problem !== null) throw new OptionsError(`defineTool: tool ${showValue(tool.name)}: ${problem}`);
  return tool;
}
