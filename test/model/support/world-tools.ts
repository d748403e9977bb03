/**
 * The world's real tools, as their owner would write them: literals for the plain ones, a
 * class-based tool for `wipe`, whose approval rule denies one scope and waives another, and
 * which forbids edits. The contract's statement of what becomes of their calls is tools.ts.
 */
import type { Tool } from '../../../src/index.js';
import { TOOL_TIMEOUT_MS } from './alphabet.js';
import { TOOL_NAMES, TOOLS, type ToolName, WIPE_DENIAL } from './tools.js';

/** wipe's approval rule: scope `all` is denied, `tmp` needs nobody, anything else a human. */
export function wipeRule(args: { scope?: unknown }): boolean | { deny: string } {
  if (args.scope === 'all') return { deny: WIPE_DENIAL };
  return args.scope !== 'tmp';
}

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
 * The world's tools; `fn` gives each its behaviour, `rule` is wipe's approval rule, `verify`
 * wipe's verify (by default it cannot tell).
 */
export function worldTools(
  fn: (name: ToolName) => Tool['fn'],
  rule: Tool['needsApproval'] = wipeRule,
  verify: NonNullable<Tool['verify']> = () => ({ unknown: true }),
): Tool[] {
  return TOOL_NAMES.map((name) => {
    if (name === 'wipe') return new RuleTool(name, rule, fn(name), verify);
    const { sideEffect, idempotent } = TOOLS[name];
    return { name, sideEffect, idempotent, timeoutMs: TOOL_TIMEOUT_MS, fn: fn(name) };
  });
}
