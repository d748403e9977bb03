/**
 * A run's side of its group budget (docs/group-budgets.md): before every model call it holds the
 * most the call may spend in the store, atomically against the group's limits and the other runs'
 * holds — a call that cannot fit the group's spending is not made; one that waits only for other
 * runs' holds waits for them — and after the call it settles the hold to what the call spent.
 *
 * Fail closed: when the store cannot answer a hold, the call is not made, and the run stops in this
 * process as after a failed save (its lease is given up: a worker, or a reload, goes on). When the
 * store cannot take a settlement, the charge is kept here and settled before the next hold, which
 * fails (stopping the run) until it is. A charge never settled leaves its hold, which the store
 * charges as spent once the lease is released or lapses: the group never counts less than the
 * call spent.
 */
import { microUsd } from '../../machines/budget.js';
import { describeError } from '../../machines/describe-error.js';
import type { CallCost, TokenCount } from '../../machines/types.js';
import type { Clock } from '../clock.js';
import { LeaseLostError, StoreUnavailableError } from '../errors.js';
import type { GroupBudgetStore, GroupCharge } from '../store/contract.js';
import { MAX_GROUP_MICRO_USD, MAX_GROUP_TOKENS } from '../store/groups.js';

/** The first pause while other runs' holds fill the group, doubling up to the last. */
const FIRST_WAIT_MS = 20;
const MAX_WAIT_MS = 1_000;

/** What a call asks to hold: its estimated input, its output cap, the fewest output tokens, and its price. */
export interface HoldAsk {
  input: number;
  output: number;
  least: number;
  /** Micro-dollars for so many tokens in and out, made when first needed; null: the call cannot be priced in advance (it holds all the room). */
  price: () => ((input: number, output: number) => number) | null;
}

/** What was held under each limit the group has (null: the group does not limit it, and nothing caps the call there). */
export interface Held {
  tokens: number | null;
  costMicroUsd: number | null;
}

/** The run's lease, as its group port sees it. */
export interface GroupLease {
  /** The run's lease token now, or null (a hold lives as long as that lease does). */
  token(): number | null;
  /** The store refused a hold: the lease is not the run's live one (the run stops in this process). */
  refused(error: LeaseLostError): void;
  /** The store could not answer a hold: the run stops in this process, as after a failed save. */
  unavailable(error: StoreUnavailableError): void;
}

export class GroupPort {
  readonly group: string;
  readonly #store: GroupBudgetStore;
  readonly #runId: string;
  readonly #lease: GroupLease;
  readonly #clock: Clock;
  /** The hold of the call in flight, until it is settled. */
  #held: { token: number } | null = null;
  /** A settlement the store did not take: made before the next hold. */
  #owed: { token: number; charge: Required<GroupCharge> } | null = null;

  constructor(store: GroupBudgetStore, group: string, runId: string, lease: GroupLease, clock: Clock) {
    this.#store = store;
    this.group = group;
    this.#runId = runId;
    this.#lease = lease;
    this.#clock = clock;
  }

  #unavailable(error: unknown): StoreUnavailableError {
    return new StoreUnavailableError(
      `the budget of group ${JSON.stringify(this.group)} could not be checked, so the call was not made: ${describeError(error)}`,
      { runId: this.#runId, cause: error },
    );
  }

  /**
   * Holds what a call may spend; waits while other runs' holds fill the group's room. A group
   * whose spending leaves no room for the call is reported as `{ budget: 'group' }`.
   * @throws StoreUnavailableError when the store cannot answer, LeaseLostError when it refuses the
   * run's lease: either way the call must not be made.
   */
  async hold(
    ask: HoldAsk,
    abort: { aborted: boolean; signal: AbortSignal },
  ): Promise<Held | { budget: 'group'; why: string }> {
    const token = this.#lease.token() ?? 0;
    const tokens = Math.min(ask.input + ask.output, MAX_GROUP_TOKENS);
    const minTokens = Math.min(ask.input + ask.least, tokens);
    const price = ask.price();
    const cost = price === null ? null : Math.min(price(ask.input, ask.output), MAX_GROUP_MICRO_USD);
    const minCost = price === null ? 1 : Math.min(price(ask.input, ask.least), cost ?? MAX_GROUP_MICRO_USD);
    let wait = FIRST_WAIT_MS;
    for (;;) {
      let result: Awaited<ReturnType<GroupBudgetStore['holdGroup']>>;
      try {
        await this.#settleOwed();
        result = await this.#store.holdGroup(this.group, {
          runId: this.#runId,
          token,
          tokens,
          costMicroUsd: cost,
          minTokens,
          minCostMicroUsd: minCost,
        });
      } catch (error) {
        // Another owner holds the run now (or nobody does): this process stops working it.
        if (error instanceof LeaseLostError) {
          this.#lease.refused(error);
          throw error;
        }
        const unavailable = this.#unavailable(error);
        this.#lease.unavailable(unavailable);
        throw unavailable;
      }
      if (result.held) {
        this.#held = { token };
        const { budget } = result.spend;
        return {
          tokens: budget.maxTokens === null ? null : result.held.tokens,
          costMicroUsd: budget.maxCostUsd === null ? null : result.held.costMicroUsd,
        };
      }
      if (result.exhausted !== null) {
        const spent = result.exhausted === 'cost' ? `$${result.spend.costUsd}` : `${result.spend.tokens} tokens`;
        return {
          budget: 'group',
          why: `the group ${JSON.stringify(this.group)} has spent ${spent} of its ${result.exhausted} budget for ${result.spend.window}: the next call does not fit`,
        };
      }
      // Other runs' holds fill the room: they settle (or lapse with their owners' leases) soon.
      if (abort.aborted) throw abort.signal.reason;
      await this.#clock.sleep(wait, abort.signal);
      wait = Math.min(wait * 2, MAX_WAIT_MS);
    }
  }

  /**
   * The call failed, timed out or was cancelled, and reported nothing: its hold is given back
   * (charged nothing, as the run's own budget charges it) while the run's lease is still the one it
   * was held under. Once the lease is lost the hold is left to be charged as spent (the call may
   * have been billed). Never throws.
   */
  async giveBack(): Promise<void> {
    const held = this.#held;
    if (held === null || this.#lease.token() !== held.token) return;
    await this.settle({ inputTokens: 0, outputTokens: 0 }, { usd: 0 });
  }

  /** Settles the call's hold to what it spent; kept to settle before the next hold if the store fails. Never throws. */
  async settle(tokens: TokenCount, cost: CallCost): Promise<void> {
    const token = this.#held?.token ?? this.#lease.token() ?? 0;
    this.#held = null;
    const charge = {
      tokens: Math.min(tokens.inputTokens + tokens.outputTokens, MAX_GROUP_TOKENS),
      costMicroUsd: 'usd' in cost ? Math.min(microUsd(cost.usd), MAX_GROUP_MICRO_USD) : 0,
      costUnknown: 'unknown' in cost,
    };
    const owed = this.#owed;
    // A charge still owed from an earlier call is added to this one (its hold is long gone).
    const total = owed
      ? {
          tokens: Math.min(owed.charge.tokens + charge.tokens, MAX_GROUP_TOKENS),
          costMicroUsd: Math.min(owed.charge.costMicroUsd + charge.costMicroUsd, MAX_GROUP_MICRO_USD),
          costUnknown: owed.charge.costUnknown || charge.costUnknown,
        }
      : charge;
    this.#owed = { token, charge: total };
    try {
      await this.#store.settleGroup(this.group, { runId: this.#runId, token, charge: total });
      this.#owed = null;
    } catch {
      // Kept: the next hold settles it first, and fails (no call) until the store takes it.
    }
  }

  async #settleOwed(): Promise<void> {
    const owed = this.#owed;
    if (!owed) return;
    await this.#store.settleGroup(this.group, { runId: this.#runId, token: owed.token, charge: owed.charge });
    if (this.#owed === owed) this.#owed = null;
  }
}
