/**
 * A run's side of its group budget (docs/group-budgets.md): before every policy call the group's
 * spending is read from the store, and the call is not made when a limit is reached; after it,
 * what the call spent is added to the group, atomically, in the store.
 *
 * Fail closed: when the store cannot answer the check, the policy is not called (the check
 * throws, and the run ends `failed` with the reason: `run()` tries again). When it cannot take a
 * charge, the charge is kept here and added by the next check, which fails until it is added:
 * the run makes no further call while its group's spending is not up to date. Only a process
 * that dies holding such a charge loses it (at most one call's cost per run).
 */
import { microUsd } from '../../machines/budget.js';
import { describeError } from '../../machines/describe-error.js';
import type { CallCost, TokenCount } from '../../machines/types.js';
import { StoreUnavailableError } from '../errors.js';
import { type GroupBudgetStore, type GroupCharge, MAX_GROUP_MICRO_USD, MAX_GROUP_TOKENS } from '../stores/groups.js';

export class GroupPort {
  readonly group: string;
  readonly #store: GroupBudgetStore;
  readonly #runId: string;
  /** Spent by calls whose charge the store has not taken yet. */
  #owed: Required<GroupCharge> | null = null;

  constructor(store: GroupBudgetStore, group: string, runId: string) {
    this.#store = store;
    this.group = group;
    this.#runId = runId;
  }

  /**
   * Whether the group's budget is spent (at or over a limit), adding any charge still owed first.
   * @throws StoreUnavailableError when the store cannot say: the policy must not be called.
   */
  async exhausted(): Promise<boolean> {
    try {
      const owed = this.#owed;
      const spend = owed ? await this.#store.spendGroup(this.group, owed) : await this.#store.groupSpend(this.group);
      if (owed === this.#owed) this.#owed = null;
      return spend.exhausted !== null;
    } catch (error) {
      throw new StoreUnavailableError(
        `the budget of group ${JSON.stringify(this.group)} could not be checked, so the policy was not called: ${describeError(error)}`,
        { runId: this.#runId, cause: error },
      );
    }
  }

  /** Adds one policy call's spending to the group; kept for the next check if the store fails. Never throws. */
  async charge(tokens: TokenCount | null, cost: CallCost): Promise<void> {
    const owed = this.#owed ?? { tokens: 0, costMicroUsd: 0, costUnknown: false };
    // Capped as a window is: a usage of 2 × 2^53 tokens must not make a charge no store takes.
    const charge = {
      tokens: Math.min(owed.tokens + (tokens ? tokens.inputTokens + tokens.outputTokens : 0), MAX_GROUP_TOKENS),
      costMicroUsd: Math.min(owed.costMicroUsd + ('usd' in cost ? microUsd(cost.usd) : 0), MAX_GROUP_MICRO_USD),
      costUnknown: owed.costUnknown || 'unknown' in cost,
    };
    this.#owed = charge;
    try {
      await this.#store.spendGroup(this.group, charge);
      if (this.#owed === charge) this.#owed = null;
    } catch {
      // Kept: the next check adds it first, and fails (no policy call) until the store takes it.
    }
  }
}
