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
  /**
   * A side effect that does not deduplicate: in flight at a crash, a human is asked again. Its
   * schema wants `to` an address (`cc` may be added), and its rule denies the blocked domain:
   * the model never writes either, so they bite only on an approver's edit.
   */
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

/** What send's rule answers for an address at `BLOCKED_DOMAIN`. */
export const SEND_DENIAL = 'that domain is blocked';
export const BLOCKED_DOMAIN = '@blocked.example';

/** Whether send's schema takes these arguments: `to` an address, `cc` one too if given, nothing else. */
export function sendArgsValid(args: unknown): boolean {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return false;
  const { to, cc, ...rest } = args as Record<string, unknown>;
  const address = (v: unknown) => typeof v === 'string' && /^[^@\s]+@[^@\s]+$/.test(v);
  return address(to) && (cc === undefined || address(cc)) && Object.keys(rest).length === 0;
}

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

/** Why an approver's edit of a call is refused, in a `decideEditForbidden` mistake. */
export type EditRefusal = 'forbidden' | 'schema' | 'rule';

/**
 * The edit a `decideEditForbidden` mistake makes: any edit where edits are forbidden (the tool's
 * `allowEdit: false`, or the call's outcome unknown); for send, one its schema refuses or one its
 * rule denies.
 */
export function forbiddenEdit(tool: string, why: EditRefusal): JsonObject {
  if (why === 'schema') return { to: 'nobody' };
  if (why === 'rule') return { to: `ops${BLOCKED_DOMAIN}` };
  return editedArgs(tool, 0);
}

/**
 * Whether a tool may ever be called with `args`, given the model's `asked`: never with an edit
 * where edits are forbidden, never with arguments its schema refuses or its rule denies.
 */
export function mayRunWith(tool: string, args: JsonObject, asked: JsonObject): string | null {
  if (!isToolName(tool)) return null;
  if (!TOOLS[tool].allowEdit && JSON.stringify(args) !== JSON.stringify(asked)) return 'an edit, but it allows none';
  if (tool === 'send' && !sendArgsValid(args)) return 'arguments its schema refuses';
  const rule = ruleOf(tool, args);
  return rule !== null && typeof rule === 'object' ? `arguments its rule denies (${rule.deny})` : null;
}

/** The approval rule, as the contract states it: run at once, ask a human, or deny. */
export type Rule = 'run' | 'ask' | { deny: string };

/** The rule for a call of `tool` with `args`, or null for a tool the world does not have. */
export function ruleOf(tool: string, args: JsonObject): Rule | null {
  if (!isToolName(tool)) return null;
  if (tool === 'send' && typeof args.to === 'string' && args.to.endsWith(BLOCKED_DOMAIN)) return { deny: SEND_DENIAL };
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
