/**
 * Group budgets: what all the runs of one group (a tenant, a user) may spend together, kept in
 * the store so that every process and worker on it agrees. The rules every store shares live
 * here: what a group id may be, what a budget may hold, which window a spend falls in, and when
 * a group is spent. The stores only add numbers atomically.
 *
 * Amounts are whole micro-dollars (machines/budget.ts): a store adds integers, never floats, and
 * caps every sum at `MAX_COST_USD` (tokens at 2^53−1) so that it stays exact.
 */
import { MAX_COST_USD, MICRO_USD } from '../../machines/budget.js';
import { LeaseLostError, OptionsError } from '../errors.js';
import { checkKeys, showValue } from '../option-keys.js';
import type {
  GroupBudget,
  GroupCharge,
  GroupHoldRequest,
  GroupHoldResult,
  GroupPeriod,
  GroupSettlement,
  GroupSpend,
} from './contract.js';
import { isLive, type LeaseRecord } from './leases.js';

/** The longest group id. */
export const MAX_GROUP_ID_LENGTH = 128;
const GROUP_ID = /^[A-Za-z0-9][A-Za-z0-9._:@-]*$/;
/** The most tokens a window counts up to: every sum stays an exact integer. */
export const MAX_GROUP_TOKENS = Number.MAX_SAFE_INTEGER;
/** The most micro-dollars a window counts up to (`MAX_COST_USD`). */
export const MAX_GROUP_MICRO_USD = MAX_COST_USD * MICRO_USD;

/**
 * Throws `OptionsError` unless `group` is a group id: 1 to 128 characters of ASCII letters,
 * digits and `. _ : @ -`, starting with a letter or digit. Group ids come from the caller's
 * tenants and users (hostile input): nothing else reaches a store, a log or a file name.
 */
export function checkGroupId(call: string, group: unknown): asserts group is string {
  if (typeof group !== 'string' || group.length > MAX_GROUP_ID_LENGTH || !GROUP_ID.test(group)) {
    throw new OptionsError(
      `${call}: a group id must be 1 to ${MAX_GROUP_ID_LENGTH} characters of ASCII letters, digits and . _ : @ -, starting with a letter or digit, got ${showValue(group)}`,
    );
  }
}

const NO_BUDGET: GroupBudget = { maxCostUsd: null, maxTokens: null, period: 'day' };

/** A budget given to `setGroupBudget`, checked and completed; null stays null (removed). */
export function checkGroupBudget(call: string, budget: unknown): GroupBudget | null {
  if (budget === null) return null;
  if (typeof budget !== 'object' || budget === undefined || Array.isArray(budget)) {
    throw new OptionsError(`${call}: the budget must be an object or null, got ${showValue(budget)}`);
  }
  checkKeys(call, budget, ['maxCostUsd', 'maxTokens', 'period']);
  const { maxCostUsd = null, maxTokens = null, period = 'day' } = budget as Partial<GroupBudget>;
  if (
    maxCostUsd !== null &&
    !(typeof maxCostUsd === 'number' && maxCostUsd >= 1 / MICRO_USD && maxCostUsd <= MAX_COST_USD)
  ) {
    throw new OptionsError(
      `${call}: maxCostUsd must be a number of US dollars from 0.000001 to ${MAX_COST_USD}, or null for no limit, got ${showValue(maxCostUsd)}`,
    );
  }
  if (maxTokens !== null && !(Number.isSafeInteger(maxTokens) && maxTokens >= 0)) {
    throw new OptionsError(
      `${call}: maxTokens must be a whole number ≥ 0, or null for no limit, got ${showValue(maxTokens)}`,
    );
  }
  if (period !== 'day' && period !== 'total') {
    throw new OptionsError(`${call}: period must be "day" or "total", got ${showValue(period)}`);
  }
  // Kept to the micro-dollar, as spending is counted.
  return { maxCostUsd: maxCostUsd === null ? null : microOf(maxCostUsd) / MICRO_USD, maxTokens, period };
}

/** Dollars as whole micro-dollars (to the nearest). */
export function microOf(usd: number): number {
  return Math.round(usd * MICRO_USD);
}

/** A charge, checked: whole numbers ≥ 0, each capped so that every sum stays exact. */
export function checkGroupCharge(call: string, charge: unknown): Required<GroupCharge> {
  if (typeof charge !== 'object' || charge === null || Array.isArray(charge)) {
    throw new OptionsError(`${call}: the charge must be an object { tokens, costMicroUsd }, got ${showValue(charge)}`);
  }
  checkKeys(call, charge, ['tokens', 'costMicroUsd', 'costUnknown']);
  const { tokens, costMicroUsd, costUnknown = false } = charge as GroupCharge;
  for (const [name, value] of [
    ['tokens', tokens],
    ['costMicroUsd', costMicroUsd],
  ] as const) {
    if (!(Number.isSafeInteger(value) && value >= 0)) {
      throw new OptionsError(`${call}: ${name} must be a whole number ≥ 0, got ${showValue(value)}`);
    }
  }
  if (typeof costUnknown !== 'boolean') {
    throw new OptionsError(`${call}: costUnknown must be true or false, got ${showValue(costUnknown)}`);
  }
  return {
    tokens: Math.min(tokens, MAX_GROUP_TOKENS),
    costMicroUsd: Math.min(costMicroUsd, MAX_GROUP_MICRO_USD),
    costUnknown,
  };
}

/** The window a spend at `now` (ms since the epoch, the store's clock) falls in under `period`. */
export function windowOf(period: GroupPeriod, now: number): string {
  return period === 'total' ? 'total' : new Date(now).toISOString().slice(0, 10);
}

/** The limit a group has reached (spent ≥ limit, like a run's budgets), cost first; or null. */
export function exhaustedOf(budget: GroupBudget, tokens: number, costMicro: number): 'cost' | 'tokens' | null {
  if (budget.maxCostUsd !== null && costMicro >= microOf(budget.maxCostUsd)) return 'cost';
  if (budget.maxTokens !== null && tokens >= budget.maxTokens) return 'tokens';
  return null;
}

/** The spend a store read: its budget (the default when none), window and sums. */
export function spendOf(
  group: string,
  budget: GroupBudget | null,
  window: string,
  tokens: number,
  costMicro: number,
): GroupSpend {
  const b = budget ?? NO_BUDGET;
  return {
    group,
    window,
    tokens,
    costUsd: costMicro / MICRO_USD,
    budget: { ...b },
    exhausted: exhaustedOf(b, tokens, costMicro),
  };
}

/**
 * The cost a window holds after `charge`, from `before` micro-dollars: capped, and under a cost
 * limit raised to at least the limit for a cost that could not be known (fail closed).
 */
export function costAfter(before: number, charge: Required<GroupCharge>, budget: GroupBudget | null): number {
  const sum = Math.min(before + charge.costMicroUsd, MAX_GROUP_MICRO_USD);
  const limit = budget?.maxCostUsd ?? null;
  return charge.costUnknown && limit !== null ? Math.max(sum, microOf(limit)) : sum;
}

/** The default budget: no limits, counted by UTC day. */
export const DEFAULT_GROUP_BUDGET: Readonly<GroupBudget> = NO_BUDGET;

/**
 * The group a run is in once it joins `group`: a run joins one group for life.
 * @throws OptionsError when it is in another group already.
 */
export function groupAfterJoin(runId: string, stored: string | null, group: string): string {
  if (stored !== null && stored !== group) {
    throw new OptionsError(
      `joinGroup: run ${showValue(runId)} is in group ${showValue(stored)}; a run cannot move to group ${showValue(group)}`,
      { runId },
    );
  }
  return group;
}

/** A hold request, checked: whole numbers ≥ 0, minimums within what is asked. */
export function checkGroupHold(call: string, request: unknown): GroupHoldRequest {
  if (typeof request !== 'object' || request === null || Array.isArray(request)) {
    throw new OptionsError(
      `${call}: the request must be an object { runId, token, tokens, costMicroUsd, minTokens, minCostMicroUsd }, got ${showValue(request)}`,
    );
  }
  checkKeys(call, request, ['runId', 'token', 'tokens', 'costMicroUsd', 'minTokens', 'minCostMicroUsd']);
  const r = request as GroupHoldRequest;
  if (typeof r.runId !== 'string' || r.runId === '')
    throw new OptionsError(`${call}: runId must be a run id, got ${showValue(r.runId)}`);
  const whole = (name: string, value: unknown, max: number) => {
    if (!(Number.isSafeInteger(value) && (value as number) >= 0 && (value as number) <= max)) {
      throw new OptionsError(`${call}: ${name} must be a whole number from 0 to ${max}, got ${showValue(value)}`);
    }
  };
  whole('token', r.token, Number.MAX_SAFE_INTEGER);
  whole('tokens', r.tokens, MAX_GROUP_TOKENS);
  if (r.costMicroUsd !== null) whole('costMicroUsd', r.costMicroUsd, MAX_GROUP_MICRO_USD);
  whole('minTokens', r.minTokens, r.tokens);
  whole('minCostMicroUsd', r.minCostMicroUsd, r.costMicroUsd ?? MAX_GROUP_MICRO_USD);
  return {
    runId: r.runId,
    token: r.token,
    tokens: r.tokens,
    costMicroUsd: r.costMicroUsd,
    minTokens: r.minTokens,
    minCostMicroUsd: r.minCostMicroUsd,
  };
}

/** A settlement, checked (its charge as `checkGroupCharge` checks one). */
export function checkGroupSettlement(
  call: string,
  settlement: unknown,
): Required<GroupSettlement> & { charge: Required<GroupCharge> } {
  if (typeof settlement !== 'object' || settlement === null || Array.isArray(settlement)) {
    throw new OptionsError(
      `${call}: the settlement must be an object { runId, token, charge }, got ${showValue(settlement)}`,
    );
  }
  checkKeys(call, settlement, ['runId', 'token', 'charge']);
  const s = settlement as GroupSettlement;
  if (typeof s.runId !== 'string' || s.runId === '')
    throw new OptionsError(`${call}: runId must be a run id, got ${showValue(s.runId)}`);
  if (!(Number.isSafeInteger(s.token) && s.token >= 0)) {
    throw new OptionsError(`${call}: token must be a whole number ≥ 0, got ${showValue(s.token)}`);
  }
  return { runId: s.runId, token: s.token, charge: checkGroupCharge(call, s.charge) };
}

/**
 * A hold (asked with `token`) whose lease is no longer live (`current`, at `now`): its owner died,
 * lost the run or let it go with the call in flight. The call may have been made, and billed, so
 * the hold is charged to its group as spent — the next hold in the group does it — and no longer
 * held. An owner that settles it after all adds nothing more (`settledByLapse`): a call is charged
 * at most what it held. Settled before it is charged, it is charged what the call spent.
 */
export function lapsedHold(token: number, current: LeaseRecord | null, now: number): boolean {
  return current === null || current.token !== token || !isLive(current, now);
}

/**
 * A settlement with `token` that finds no hold of that token adds nothing when the lease of that
 * token is no longer live (`current`, at `now`): its hold was charged as spent (`lapsedHold`), at
 * least what the call could be charged. Under the live lease it adds its charge (there was no hold).
 */
export function settledByLapse(token: number, current: LeaseRecord | null, now: number): boolean {
  return lapsedHold(token, current, now);
}

/**
 * Why a hold asked with `token` is refused, or null: it must be asked under the run's lease that
 * is live at `now` (`current` is the run's lease record). A hold counts only while its lease is
 * live, so one granted to an owner that lost its run would count for nobody, and would replace
 * the new owner's hold: other runs would get that room, and the group would spend past its limit.
 */
export function holdLeaseLost(
  runId: string,
  token: number,
  current: LeaseRecord | null,
  now: number,
): LeaseLostError | null {
  if (current !== null && current.token === token && isLive(current, now)) return null;
  let why: string;
  if (current === null) why = 'the run has no lease';
  else if (current.token !== token) {
    const by = current.owner === null ? 'and released since' : `by ${JSON.stringify(current.owner)}`;
    why = `the run was claimed again (token ${current.token}) ${by}`;
  } else if (current.owner === null) why = 'the lease was released';
  else why = `the lease ended at ${new Date(current.expiresAt ?? 0).toISOString()}`;
  return new LeaseLostError(
    `holdGroup: run ${JSON.stringify(runId)} asked a hold with lease token ${token}, which is not live: ${why}; nothing was held`,
    token,
    current?.token ?? null,
    current?.owner ?? null,
    { runId },
  );
}

/**
 * The rule of a hold, the same in every store: for each limit the group has (cost first), the
 * room is the limit less the window's spending less the other runs' live holds. When the
 * spending alone leaves less than the minimum, the group is `exhausted` under that limit; when the
 * holds leave less, nothing is held yet; else the hold is what was asked, up to the room (a cost
 * of null asks for all the room). A dimension without a limit holds what was asked (0 for a null cost).
 */
export function groupHold(
  budget: GroupBudget | null,
  spent: { tokens: number; cost: number },
  others: { tokens: number; cost: number },
  request: GroupHoldRequest,
): Pick<GroupHoldResult, 'held' | 'exhausted'> {
  const costLimit = budget?.maxCostUsd == null ? null : microOf(budget.maxCostUsd);
  const tokenLimit = budget?.maxTokens ?? null;
  // Spent: the spending alone leaves less than the least worth holding (whatever others hold).
  if (costLimit !== null && costLimit - spent.cost < request.minCostMicroUsd) return { held: null, exhausted: 'cost' };
  if (tokenLimit !== null && tokenLimit - spent.tokens < request.minTokens) return { held: null, exhausted: 'tokens' };
  const costRoom = costLimit === null ? null : costLimit - spent.cost - others.cost;
  const tokenRoom = tokenLimit === null ? null : tokenLimit - spent.tokens - others.tokens;
  // Busy: the other runs' holds fill the room for now.
  if (
    (costRoom !== null && costRoom < request.minCostMicroUsd) ||
    (tokenRoom !== null && tokenRoom < request.minTokens)
  ) {
    return { held: null, exhausted: null };
  }
  const asked = request.costMicroUsd;
  const costMicroUsd = costRoom === null ? (asked ?? 0) : asked === null ? costRoom : Math.min(asked, costRoom);
  const tokens = tokenRoom === null ? request.tokens : Math.min(request.tokens, tokenRoom);
  return { held: { tokens, costMicroUsd }, exhausted: null };
}
