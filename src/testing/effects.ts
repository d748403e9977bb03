/**
 * Recording the tool calls a run makes: each tool's `fn` wrapped to note its call before it runs,
 * so that `checkInvariants` can hold what was actually called against what the run records.
 */
import type { JsonObject } from '../../machines/types.js';
import type { Tool, ToolContext } from '../types.js';

/** One call of a tool's `fn`, noted as it began. */
export interface Effect {
  runId: string;
  tool: string;
  /** The call's idempotency key. */
  key: string;
  /** The arguments `fn` got (the schema's output; an approver's edit when there was one), as JSON. */
  args: JsonObject;
  /** The approval it ran under (`ctx.approvedCallId`), or null for a call that needed none. */
  approvedCallId: string | null;
  /** The run's fencing token (`ctx.fence`), or null without a store. */
  fence: number | null;
}

/** What `recordEffects` returns: give `tools` to the agent, and the whole of it to `checkInvariants`. */
export interface RecordedTools<T extends readonly Tool[]> {
  tools: T;
  /** Every call of a tool's `fn`, in the order they began (across agents, resumes and runs). */
  effects: Effect[];
}

/**
 * The same tool with another `fn`: a view of the original, whose other fields, methods (`verify`)
 * and state stay the original's (methods are called with the original as `this`).
 */
export function withFn(tool: Tool, fn: Tool['fn']): Tool {
  return new Proxy(tool, { get: (target, p) => (p === 'fn' ? fn : Reflect.get(target, p, target)) });
}

/**
 * The same tools, each call of their `fn` noted in `effects` before it runs. Each wrapped tool is
 * a view of the original: its other fields, its methods (`verify`) and its state are the
 * original's, and `fn` is called with the original as `this`.
 *
 * @example
 * const recorded = recordEffects([refund]);
 * const agent = new Agent({ policy, tools: recorded.tools });
 * await agent.start('refund order A-1');
 * expect(await checkInvariants(agent, recorded)).toEqual([]);
 * expect(recorded.effects.map((e) => e.tool)).toEqual(['refund']);
 */
export function recordEffects<const T extends readonly Tool[]>(tools: T): RecordedTools<T> {
  const effects: Effect[] = [];
  const wrap = (tool: Tool): Tool => {
    const fn = tool.fn;
    const recorded = function (this: unknown, args: JsonObject, key: string, ctx: ToolContext): unknown {
      effects.push({
        runId: ctx.runId,
        tool: tool.name,
        key,
        args: structuredClone(args),
        approvedCallId: ctx.approvedCallId,
        fence: ctx.fence,
      });
      return fn.call(tool, args, key, ctx);
    };
    return withFn(tool, recorded);
  };
  return { tools: tools.map(wrap) as unknown as T, effects };
}
