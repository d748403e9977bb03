/**
 * `CheckedGroupStore`: a `CheckedStore` with group budgets, whose group methods check their
 * arguments once (group ids, budgets, charges, holds, settlements, run ids) and call the backend's
 * `…Checked` methods, as `CheckedStore` does for runs and leases.
 */
import { checkRunId } from './arguments.js';
import { CheckedStore } from './checked.js';
import type {
  GroupBudget,
  GroupBudgetStore,
  GroupCharge,
  GroupHoldRequest,
  GroupHoldResult,
  GroupSettlement,
  GroupSpend,
} from './contract.js';
import { checkGroupBudget, checkGroupCharge, checkGroupHold, checkGroupId, checkGroupSettlement } from './groups.js';

/** A settlement as `checkGroupSettlement` returns it: every field given, the charge's too. */
export type CheckedSettlement = ReturnType<typeof checkGroupSettlement>;

/** A `CheckedStore` that has group budgets: the backend writes the `…Checked` group methods. */
export abstract class CheckedGroupStore extends CheckedStore implements GroupBudgetStore {
  async setGroupBudget(group: string, budget: Partial<GroupBudget> | null): Promise<void> {
    checkGroupId('setGroupBudget', group);
    return this.setGroupBudgetChecked(group, checkGroupBudget('setGroupBudget', budget));
  }

  async groupSpend(group: string): Promise<GroupSpend> {
    checkGroupId('groupSpend', group);
    return this.groupSpendChecked(group);
  }

  async spendGroup(group: string, charge: GroupCharge): Promise<GroupSpend> {
    checkGroupId('spendGroup', group);
    return this.spendGroupChecked(group, checkGroupCharge('spendGroup', charge));
  }

  async holdGroup(group: string, request: GroupHoldRequest): Promise<GroupHoldResult> {
    checkGroupId('holdGroup', group);
    const checked = checkGroupHold('holdGroup', request);
    checkRunId('holdGroup', checked.runId);
    return this.holdGroupChecked(group, checked);
  }

  async settleGroup(group: string, settlement: GroupSettlement): Promise<GroupSpend> {
    checkGroupId('settleGroup', group);
    const checked = checkGroupSettlement('settleGroup', settlement);
    checkRunId('settleGroup', checked.runId);
    return this.settleGroupChecked(group, checked);
  }

  async joinGroup(runId: string, group: string): Promise<void> {
    checkRunId('joinGroup', runId);
    checkGroupId('joinGroup', group);
    return this.joinGroupChecked(runId, group);
  }

  async groupOf(runId: string): Promise<string | null> {
    checkRunId('groupOf', runId);
    return this.groupOfChecked(runId);
  }

  /** `budget`: the whole budget (missing fields filled: no limit, daily), or null to remove it. */
  protected abstract setGroupBudgetChecked(group: string, budget: GroupBudget | null): Promise<void>;
  protected abstract groupSpendChecked(group: string): Promise<GroupSpend>;
  protected abstract spendGroupChecked(group: string, charge: Required<GroupCharge>): Promise<GroupSpend>;
  protected abstract holdGroupChecked(group: string, request: GroupHoldRequest): Promise<GroupHoldResult>;
  protected abstract settleGroupChecked(group: string, settlement: CheckedSettlement): Promise<GroupSpend>;
  protected abstract joinGroupChecked(runId: string, group: string): Promise<void>;
  protected abstract groupOfChecked(runId: string): Promise<string | null>;
}
