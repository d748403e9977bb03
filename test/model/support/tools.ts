/**
 * The tools of the test world and what the contract (issue 12) says of their calls, stated here
 * by hand: which calls run at once, which wait for a human, which a rule denies, which may be
 * edited, what a crash does to one in flight. The world's real tools (world.ts) are written
 * separately; the runtime's classification (src/runtime/classify.ts) is checked against this.
 */
import type { JsonObject, Verdict } from '../../../machines/types.js';

export const TOOLS = {
  /** Pure: runs at once; in flight at a crash, it simply runs again. */
  lookup: { sideEffect: false, idempotent: false, allowEdit: true },
  /** A side effect that does not deduplicate: in flight at a crash, a human is asked again. */
  send: { sideEffect: true, idempotent: false, allowEdit: true },
  /** A side effect that deduplicates by its key: in flight at a crash, it is called again. */
  charge: { sideEffect: true, idempotent: true, allowEdit: true },
  /**
   * A side effect with an approval rule: scope `tmp` needs nobody, scope `all` is denied by the
   * rule, any other scope asks a human. Edits are not allowed (`allowEdit: false`). It has a
   * `verify`: in flight at a crash, or timed out, it is asked whether the wipe happened, and its
   * answer (the move's `verify`) decides: done is recorded, not done runs again (after a crash,
   * under an approval still young), unknown goes to a human.
   */
  wipe: { sideEffect: true, idempotent: false, allowEdit: false },
} as const;

/** What a tool's `verify` answers in a move: the effect happened, did not, or it cannot tell. */
export type VerifyAnswer = 'done' | 'notDone' | 'unknown';
export const VERIFY_ANSWERS: readonly VerifyAnswer[] = ['done', 'notDone', 'unknown'];

/** Whether the tool has a `verify` (asked when a call's outcome is unknown). */
export const hasVerify = (tool: string): boolean => tool === 'wipe';

/** The result a `verify` that found the effect done gives, recorded as the call's result. */
export const verifiedResult = (key: string) => ({ wiped: key });

export type ToolName = keyof typeof TOOLS;
export const TOOL_NAMES = Object.keys(TOOLS) as ToolName[];
export const isToolName = (name: string): name is ToolName => Object.hasOwn(TOOLS, name);

/** A tool a policy may name: one of the world's, or one it does not have. */
export type CallTool = ToolName | 'unknown';
export const UNKNOWN_TOOL = 'teleport';
export const toolNameOf = (tool: CallTool): string => (tool === 'unknown' ? UNKNOWN_TOOL : tool);

/** What wipe's rule answers for scope `all`: the model sees `denied by rule: <this>`. */
export const WIPE_DENIAL = 'wiping everything is not allowed';
const WIPE_SCOPES = ['cache', 'tmp', 'all'] as const;

/** The arguments a policy gives a call, by variant. */
export function argsOf(tool: CallTool, variant: number): JsonObject {
  switch (tool) {
    case 'lookup':
      return { q: `q${variant}` };
    case 'send':
      return { to: `ops${variant}@example.com` };
    case 'charge':
      return { amount: variant + 1 };
    case 'wipe':
      return { scope: WIPE_SCOPES[variant % WIPE_SCOPES.length] as string };
    case 'unknown':
      return { to: 'mars' };
  }
}

/** The arguments an approver edits a call to, by variant (only tools that allow edits). */
export function editedArgs(tool: string, variant: number): JsonObject {
  switch (tool) {
    case 'send':
      return { to: `edited${variant}@example.com`, cc: 'audit@example.com' };
    case 'charge':
      return { amount: 1_000 + variant };
    default:
      return { q: `edited${variant}` };
  }
}

/** The approval rule, as the contract states it: run at once, ask a human, or deny. */
export type Rule = 'run' | 'ask' | { deny: string };

/** The rule for a call of `tool` with `args`, or null for a tool the world does not have. */
export function ruleOf(tool: string, args: JsonObject): Rule | null {
  if (!isToolName(tool)) return null;
  if (tool !== 'wipe') return TOOLS[tool].sideEffect ? 'ask' : 'run';
  if (args.scope === 'all') return { deny: WIPE_DENIAL };
  return args.scope === 'tmp' ? 'run' : 'ask';
}

/** What the runtime must tell the machine about a call (its `Verdict`), written out. */
export function verdictOf(tool: string, args: JsonObject): Verdict {
  const rule = ruleOf(tool, args);
  if (rule === null) return { kind: 'refuse', error: `unknown tool ${tool}` };
  if (typeof rule === 'object') return { kind: 'refuse', error: `denied by rule: ${rule.deny}` };
  return { kind: rule };
}

/** Whether an approver may edit a call of `tool` (and the call's outcome is known). */
export const mayEdit = (tool: string, outcome?: 'unknown' | null): boolean =>
  isToolName(tool) && TOOLS[tool].allowEdit && outcome !== 'unknown';

/** A side effect that a crash mid-call sends back to a human (the write-ahead rule). */
export const asksAgainAfterCrash = (tool: string): boolean =>
  isToolName(tool) && TOOLS[tool].sideEffect && !TOOLS[tool].idempotent;

export const isSideEffect = (tool: string): boolean => isToolName(tool) && TOOLS[tool].sideEffect;
export const isIdempotent = (tool: string): boolean => isToolName(tool) && TOOLS[tool].idempotent;
