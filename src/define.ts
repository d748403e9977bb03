/**
 * The agent module format: a file whose default export is `defineAgent({...})`. The CLI
 * (`tollgate run <module>`) and services load such modules to start and resume runs.
 */
import { z } from 'zod';
import { checkOptions, must, type OptionShape } from './option-schema.js';
import { agentShape, parseAgentOptions } from './options.js';
import type { AgentOptions, ResumeOptions, Tool } from './types.js';

// Symbol.for: recognised even when the module was built against another copy of tollgate.
const BRAND = Symbol.for('tollgate.agent-definition');

/** An agent's definition: everything `new Agent` takes but the run id and store. */
export interface AgentDefinition<Tools extends readonly Tool[] = readonly Tool[]>
  extends Omit<AgentOptions<Tools>, 'runId' | 'store' | 'agent' | 'budgetGroup'> {
  /** A short name, shown by the CLI and saved with its runs (`StoredRun.agent`), by which workers find the definition. */
  name: string;
  /** One line on what the agent does. */
  description?: string;
}

// A run's id, store, agent name and group (a tenant, a user) are per run, not per definition: new
// Agent and submitRun take them.
const { runId: _r, store: _s, agent: _a, budgetGroup: _g, ...definitionOptions } = agentShape;
const definitionShape = {
  ...definitionOptions,
  // Stored with each run (StoredRun.agent): as long and as plain as every store keeps it.
  name: must('a non-empty string of at most 256 characters, without NUL', (e) =>
    z.custom<string>((v) => typeof v === 'string' && v.trim() !== '' && v.length <= 256 && !v.includes('\u0000'), e),
  ),
  description: z.string({ error: 'a string' }).optional(),
} satisfies OptionShape<AgentDefinition>;

/**
 * Declares an agent, checked up front.
 *
 * @example
 * // agents/support.js
 * export default defineAgent({ name: 'support', policy, tools, maxSteps: 12 });
 */
export function defineAgent<Tools extends readonly Tool[] = readonly Tool[]>(
  definition: AgentDefinition<Tools>,
): AgentDefinition<Tools> {
  checkOptions('defineAgent', definition, definitionShape);
  parseAgentOptions(agentOptionsOf(definition), 'defineAgent');
  return Object.freeze({ ...definition, [BRAND]: true });
}

/**
 * The options of `new Agent` that a definition gives: all of it but its description, its name
 * as `agent` (saved with the run, so that a `Worker` given the definition can take it up).
 */
export function agentOptionsOf<Tools extends readonly Tool[] = readonly Tool[]>(
  definition: AgentDefinition<Tools>,
): Omit<AgentOptions<Tools>, 'runId' | 'store'> {
  const { name, description: _d, ...options } = definition;
  return { ...options, agent: name };
}

/**
 * The options of `Agent.resume` / `Agent.load` that a definition gives: its policy, tools and
 * runtime settings, never its limits. A stored run's limits are the run's own: resuming it with
 * the module's `maxSteps` would reset a budget the run was started with.
 */
export function resumeOptionsOf<Tools extends readonly Tool[] = readonly Tool[]>(
  definition: AgentDefinition<Tools>,
): ResumeOptions<Tools> {
  const {
    name,
    policy,
    tools,
    clock,
    policyRetries,
    retryDelayMs,
    policyTimeoutMs,
    leaseMs,
    leaseWaitMs,
    durability,
    concurrency,
    owner,
    inspect,
    tracer,
    price,
    compaction,
  } = definition;
  return {
    policy,
    tools,
    agent: name,
    ...(clock === undefined ? {} : { clock }),
    ...(policyRetries === undefined ? {} : { policyRetries }),
    ...(retryDelayMs === undefined ? {} : { retryDelayMs }),
    ...(policyTimeoutMs === undefined ? {} : { policyTimeoutMs }),
    ...(leaseMs === undefined ? {} : { leaseMs }),
    ...(leaseWaitMs === undefined ? {} : { leaseWaitMs }),
    ...(durability === undefined ? {} : { durability }),
    ...(concurrency === undefined ? {} : { concurrency }),
    ...(owner === undefined ? {} : { owner }),
    ...(inspect === undefined ? {} : { inspect }),
    ...(tracer === undefined ? {} : { tracer }),
    // The price is how the run's spending is counted, not a limit: a resumed run needs it.
    ...(price === undefined ? {} : { price }),
    // So is the compaction: a resumed run summarises as the definition says.
    ...(compaction === undefined ? {} : { compaction }),
  };
}

/** True for a value made by `defineAgent`. */
export function isAgentDefinition(value: unknown): value is AgentDefinition<any> {
  return value !== null && typeof value === 'object' && (value as Record<symbol, unknown>)[BRAND] === true;
}
