/**
 * The world's real tools, as their owner would write them: literals for the plain ones, a
 * class-based tool for `wipe`, whose approval rule denies one scope and waives another, and
 * which forbids edits. The contract's statement of what becomes of their calls is tools.ts.
 */

import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { Tool } from '../../../src/index.js';
import { TOOL_TIMEOUT_MS } from './alphabet.js';
import { BLOCKED_DOMAIN, SEND_DENIAL, sendArgsValid, TOOL_NAMES, TOOLS, type ToolName, WIPE_DENIAL } from './tools.js';

/** wipe's approval rule: scope `all` is denied, `tmp` needs nobody, anything else a human. */
export function wipeRule(args: { scope?: unknown }): boolean | { deny: string } {
  if (args.scope === 'all') return { deny: WIPE_DENIAL };
  return args.scope !== 'tmp';
}

/** send's rule: an address at the blocked domain is denied; any other asks a human. */
export function sendRule(args: { to?: unknown }): boolean | { deny: string } {
  return typeof args.to === 'string' && args.to.endsWith(BLOCKED_DOMAIN) ? { deny: SEND_DENIAL } : true;
}

/** The world's approval rules, by the tool that asks (wipe's and send's). */
export const worldRule = (args: Record<string, unknown>, tool: string): boolean | { deny: string } =>
  tool === 'send' ? sendRule(args) : wipeRule(args);

/** send's schema, written as a Standard Schema v1 by hand (what zod or valibot would make). */
const sendInput: StandardSchemaV1<Record<string, unknown>, Record<string, unknown>> = {
  '~standard': {
    version: 1,
    vendor: 'tollgate-model',
    validate: (value) =>
      sendArgsValid(value)
        ? { value: value as Record<string, unknown> }
        : { issues: [{ message: 'to (and cc) must be addresses, and nothing else' }] },
  },
};

/**
 * A tool written as a class. (`wipe` is one because a tool literal with `allowEdit` is refused
 * by the options check: known bug `allow-edit-rejected`; a class instance's keys are not checked.)
 */
class RuleTool implements Tool {
  readonly name: string;
  readonly sideEffect: boolean;
  readonly idempotent: boolean;
  readonly allowEdit = false;
  readonly timeoutMs = TOOL_TIMEOUT_MS;
  readonly needsApproval: Tool['needsApproval'];
  readonly fn: Tool['fn'];
  readonly verify: Tool['verify'];

  constructor(name: ToolName, rule: Tool['needsApproval'], fn: Tool['fn'], verify: Tool['verify']) {
    this.name = name;
    this.sideEffect = TOOLS[name].sideEffect;
    this.idempotent = TOOLS[name].idempotent;
    this.needsApproval = rule;
    this.fn = fn;
    this.verify = verify;
  }
}

/**
 * The world's tools; `fn` gives each its behaviour, `rule` is wipe's and send's approval rule,
 * `verify` wipe's verify (by default it cannot tell).
 */
export function worldTools(
  fn: (name: ToolName) => Tool['fn'],
  rule: Tool['needsApproval'] = (args, ctx) => worldRule(args, ctx.tool),
  verify: NonNullable<Tool['verify']> = () => ({ unknown: true }),
): Tool[] {
  return TOOL_NAMES.map((name) => {
    if (name === 'wipe') return new RuleTool(name, rule, fn(name), verify);
    const { sideEffect, idempotent } = TOOLS[name];
    const tool: Tool = { name, sideEffect, idempotent, timeoutMs: TOOL_TIMEOUT_MS, fn: fn(name) };
    return name === 'send' ? { ...tool, input: sendInput, needsApproval: rule } : tool;
  });
}
