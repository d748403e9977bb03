/** What the commands share: common options, their parsers, and the store each command opens. */
import { userInfo } from 'node:os';
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { Limits, Message } from '../../../machines/types.js';
import { Agent } from '../../agent.js';
import type { AgentDefinition } from '../../define.js';
import { resumeOptionsOf } from '../../define.js';
import { RunNotFoundError } from '../../errors.js';
import { joinRun } from '../../store/contract.js';
import { noRun, type OpenedStore, openStore } from '../open-store.js';
import { DEFAULT_STORE, locateStore, storeSpec } from '../store-location.js';

/** Turns an action that returns an exit code into a commander action (see main.ts). */
export type Act = <A extends unknown[]>(fn: (...args: A) => Promise<number>) => (...args: A) => Promise<void>;

/** The options every store-using command has. */
export interface Common {
  store?: string;
  json?: boolean;
}

/** The limit options (`--max-steps`, `--max-tokens`, `--max-active-ms`, `--max-cost-usd`) as parsed. */
export interface LimitFlags {
  maxSteps?: number;
  maxTokens?: number;
  maxActiveMs?: number;
  maxCostUsd?: number;
}

/** A whole number ≥ 0. */
export function count(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isSafeInteger(n) || n < 0) {
    throw new InvalidArgumentError('expected a whole number ≥ 0');
  }
  return n;
}

/** A number of US dollars > 0, in plain decimal notation (`2.5`, `0.05`). */
export function dollars(value: string): number {
  const n = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value.trim()) || !Number.isFinite(n) || n <= 0) {
    throw new InvalidArgumentError('expected a number of US dollars > 0, such as 2.50');
  }
  return n;
}

/** A run id: not empty (an empty one would silently become a fresh UUID). */
export function runIdValue(value: string): string {
  if (value === '') throw new InvalidArgumentError('a run id cannot be empty');
  return value;
}

/** `--store`: where runs are (store-location.ts). */
export const storeOption = () =>
  new Option(
    '--store <path|url>',
    `SQLite file or postgres:// URL (default: $TOLLGATE_STORE, else ./${DEFAULT_STORE})`,
  );

/** `--system <text>`, repeatable: the run starts from these system messages and the goal. */
export const systemOption = () =>
  new Option('--system <text>', 'a system message (instructions) the run starts with; repeat for more').argParser(
    (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
  );

/** What a run starts from: the goal alone, or the `--system` messages and then the goal. */
export function withSystem(goal: string, system: readonly string[] | undefined): string | Message[] {
  if (!system || system.length === 0) return goal;
  return [...system.map((content) => ({ role: 'system' as const, content })), { role: 'user', content: goal }];
}

/** `--json`: JSON on stdout, and errors as JSON on stderr (main.ts). */
export const jsonOption = () => new Option('--json', 'print JSON for scripts (errors too, on stderr)');

/** Adds the limit options; `what` says what giving one does on this command. */
export function limitOptions(cmd: Command, what: string): Command {
  return cmd
    .option('--max-steps <n>', `step budget (${what})`, count)
    .option('--max-tokens <n>', `token budget (${what})`, count)
    .option('--max-active-ms <ms>', `active-time budget in ms (${what})`, count)
    .option('--max-cost-usd <usd>', `cost budget in US dollars (${what}; the module's agent needs a price)`, dollars);
}

/** The limits given on the command line, and only those: a run's limits change only when asked. */
export function limitsOf(o: LimitFlags): Partial<Limits> {
  return {
    ...(o.maxSteps === undefined ? {} : { maxSteps: o.maxSteps }),
    ...(o.maxTokens === undefined ? {} : { maxTokens: o.maxTokens }),
    ...(o.maxActiveMs === undefined ? {} : { maxActiveMs: o.maxActiveMs }),
    ...(o.maxCostUsd === undefined ? {} : { maxCostUsd: o.maxCostUsd }),
  };
}

/** Opens the command's store and always closes it. Only `create` commands may create an SQLite file. */
export async function withStore<T>(
  o: Common,
  mode: { create: boolean },
  work: (opened: OpenedStore) => Promise<T>,
): Promise<T> {
  const opened = await openStore(locateStore(storeSpec(o.store)), mode);
  try {
    return await work(opened);
  } finally {
    await opened.store.close();
  }
}

/**
 * Loads a stored run to continue it with a module's policy and tools. The run keeps its own
 * limits (resumeOptionsOf gives none) unless `limits` names new ones.
 */
export async function loadAgent(
  opened: OpenedStore,
  runId: string,
  definition: Pick<AgentDefinition, 'policy' | 'tools'> | AgentDefinition,
  limits: Partial<Limits> = {},
): Promise<Agent> {
  const options = 'name' in definition ? resumeOptionsOf(definition) : definition;
  try {
    return await Agent.load(opened.store, runId, { ...options, ...limits });
  } catch (error) {
    if (error instanceof RunNotFoundError) throw noRun(opened, runId);
    throw error;
  }
}

/**
 * Policy and tools for loading a run without its module (show, export, cancel). Nothing of it
 * can act: the policy never answers, and with no tools a call restarted on load finds none.
 */
export const INERT = { policy: () => new Promise<never>(() => {}), tools: [] };

/** A stored run, read: its record, checkpoint and state. */
export async function readRun(opened: OpenedStore, runId: string) {
  const record = await opened.store.load(runId);
  if (!record) throw noRun(opened, runId);
  const blob = joinRun(record.head, record.entries, record.base);
  return { record, blob, state: Agent.resume(blob, INERT).state };
}

/** Who decides: `--as`, else $TOLLGATE_USER, else the OS user. */
export function approver(as: string | undefined): string {
  if (as !== undefined) return as;
  if (process.env.TOLLGATE_USER) return process.env.TOLLGATE_USER;
  try {
    return userInfo().username;
  } catch {
    return 'human';
  }
}

/** True when a human can be asked: stdin and stdout are terminals and --no-input was not given. */
export function canAsk(o: { input?: boolean }): boolean {
  return o.input !== false && process.stdin.isTTY === true && process.stdout.isTTY === true;
}
