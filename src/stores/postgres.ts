/**
 * A `CheckpointStore` on PostgreSQL with `pg`: many processes on many machines can share it.
 *
 * A run is a row in `runs` (its small head, base, version, status, pending calls) and its history
 * rows in `entries`, one per entry, append-only; its lease a row in `leases`. A save is one SQL
 * statement, so one transaction and one round trip: lock the lease row and check the lease, a
 * conditional insert (version 0) or update (`WHERE version = expected AND entry_count = from`)
 * of the head, the appended entries inserted only if that matched, the lease extended. A
 * concurrent writer that lost waits on the row lock, re-checks the condition, matches nothing
 * and gets a `ConflictError`: never an overwrite. Cost per save: O(new data). The saves of runs
 * that wait in one event-loop turn share one statement (postgres/batch-commit.ts). A claim is one
 * statement too (`INSERT … ON CONFLICT DO UPDATE … WHERE` the lease is free): Postgres is the
 * coordination engine, with nothing home-made beside it. Workers take runs with `claimNext`, one
 * statement with `FOR UPDATE SKIP LOCKED`, and wake on `LISTEN`/`NOTIFY` (`watch`); approvers
 * record decisions with `queueDecision`, one statement too (postgres/queue.ts, sql.ts).
 *
 * Every wait is bounded (connect, statement, query timeouts), every pooled connection has an
 * error listener, and every failure reaches the caller as a typed error naming the server
 * without its password: a dropped or black-holed connection never kills or hangs the process.
 *
 * @example
 * import { PostgresStore } from 'tollgate/postgres';
 * const store = new PostgresStore(process.env.DATABASE_URL, { schema: 'tollgate' });
 * const agent = new Agent({ store, policy, tools });
 * // … later, in any process:
 * for (const run of await store.list({ status: 'awaiting_approval' })) console.log(run.pending);
 * await store.close();
 */

import type { Pool, PoolConfig } from 'pg';
import pg from 'pg';
import { type LeaseLostError, OptionsError, StoreUnavailableError } from '../errors.js';
import { showValue } from '../option-keys.js';
import { agentAfterSave, checkClock, checkStoreOptions } from '../store/arguments.js';
import type { CheckedClaim, CheckedClaimNext } from '../store/checked.js';
import { CheckedGroupStore, type CheckedSettlement } from '../store/checked-groups.js';
import { ClaimTurns } from '../store/claim-order.js';
import { timestampOf } from '../store/clock.js';
import { deleteConflict, saveConflict } from '../store/conflicts.js';
import type {
  GroupBudget,
  GroupCharge,
  GroupHoldRequest,
  GroupHoldResult,
  GroupSpend,
  Lease,
  ListOptions,
  OpenedRun,
  RunSummary,
  RunWrite,
  StoredRun,
} from '../store/contract.js';
import { busyError, claimWithin, leaseLost, leaseOf } from '../store/leases.js';
import { earliestExpiry } from '../store/pending-calls.js';
import { SaveBatches, type SaveRow } from './postgres/batch-commit.js';
import { Connections, type StoreSql } from './postgres/connections.js';
import { sqlStateOf } from './postgres/faults.js';
import { groupStatements, groupsOn } from './postgres/groups.js';
import { type ClaimTry, LeaseBatches } from './postgres/lease-batches.js';
import { migrate } from './postgres/migrations.js';
import { openedOf, openText } from './postgres/open.js';
import { checkPoolOptions, OPTIONS, type PostgresStoreOptions } from './postgres/options.js';
import { checkConnectionString, describeTarget, isPool, poolConfigOf, timeoutsOf } from './postgres/pool-settings.js';
import { claimNextIn, type Query, queueIn } from './postgres/queue.js';
import {
  fenceError,
  type LeaseRow,
  type RefusalRow,
  type RenewedRow,
  type RunRow,
  recordOf,
  storedRunOfRows,
  summaryOf,
} from './postgres/rows.js';
import { type Statements, statements } from './postgres/sql.js';
import { Watch } from './postgres/watch.js';

export { SCHEMA_VERSION } from './postgres/migrations.js';
export type { PostgresStoreOptions } from './postgres/options.js';
export { redactUrl } from './postgres/pool-settings.js';
/** Also exported by `tollgate`; kept here for code that imported it from `tollgate/postgres`. */
export { StoreUnavailableError };

const CALL = 'new PostgresStore';

/**
 * A statement refuses a write or a claim atomically; reading why takes a second statement. When
 * the cause is gone by then (a lease released, a lease lapsed in between), nothing was written,
 * and the statement is tried again at once, this many times at most.
 */
const REFUSAL_RETRIES = 3;

/**
 * A `CheckpointStore` on PostgreSQL. Give it a connection string, a `pg` pool config, or a
 * `pg.Pool` you own. The schema is migrated on first use (or call `migrate()`).
 * `close()` ends the pool the store created; a pool you passed stays yours to end (and its
 * idle connections' errors are yours to listen to: `pool.on('error', …)`).
 */
export class PostgresStore extends CheckedGroupStore {
  /** Each run's base is a column of its row, written by the statement that writes the head. */
  readonly keepsBase = true;
  readonly #sql: Statements;
  readonly #groups: ReturnType<typeof groupsOn>;
  readonly #schema: string;
  readonly #pool: Pool;
  readonly #ownsPool: boolean;
  readonly #connections: Connections;
  readonly #now: (() => number) | undefined;
  readonly #watch: Watch;
  /** Saves, sent in batches: those of runs that wait in one event-loop turn share a statement. */
  readonly #saves: SaveBatches;
  readonly #leases: LeaseBatches;
  /** When this store object next takes the oldest runnable run whatever its class (claim-order.ts). */
  readonly #turns = new ClaimTurns();
  #ready: Promise<number> | null = null;
  #closed = false;

  /** @throws OptionsError for a malformed URL, an unknown option or a bad value; nothing is connected yet. */
  constructor(connection: string | PoolConfig | Pool, options?: PostgresStoreOptions) {
    super();
    const o = checkStoreOptions(CALL, options, OPTIONS);
    const schema = checkPoolOptions(CALL, o);
    const timeouts = timeoutsOf(CALL, o);
    this.#now = checkClock(CALL, o.now);
    this.#schema = schema;
    this.#sql = statements(`"${schema}"`, schema);
    const prepared = o.preparedStatements ?? true;
    if (typeof prepared !== 'boolean') {
      throw new OptionsError(`${CALL}: preparedStatements must be true or false, got ${showValue(prepared)}`);
    }
    const { load, summary, insertRun, updateRun, saveRuns, claim, claimRuns, renew, release, releaseRuns } = this.#sql;
    const names = prepared
      ? [load, summary, insertRun, updateRun, saveRuns, claim, claimRuns, renew, release, releaseRuns]
      : [];
    this.#saves = new SaveBatches({
      many: async (values) =>
        (await this.#query<{ run_id: string; version: number }>('save', this.#sql.saveRuns, values)).rows,
      one: (save) => this.#saveOne(save),
      at: () => this.#at(),
      sqlState: sqlStateOf,
    });
    this.#leases = new LeaseBatches({
      claimMany: async (values) =>
        (await this.#query<LeaseRow & { run_id: string }>('claim', this.#sql.claimRuns, values)).rows,
      releaseMany: async (values) =>
        (await this.#query<{ run_id: string }>('release', this.#sql.releaseRuns, values)).rows,
      claimOne: (claim) => this.#claimOne(claim),
      releaseOne: async ({ runId, token }) =>
        ((await this.#query('release', this.#sql.release, [runId, token])).rowCount ?? 0) > 0,
      at: () => this.#at(),
      sqlState: sqlStateOf,
    });
    this.#groups = groupsOn(this.#query, groupStatements(`"${schema}"`), (op, work) => this.#run(op, work));
    this.#watch = new Watch(() => this.#connections.acquire('PostgresStore.watch'), schema);
    if (isPool(connection)) {
      this.#pool = connection;
      this.#ownsPool = false;
      this.#connections = new Connections(connection, 'the given pool', timeouts, names);
      return;
    }
    if (typeof connection === 'string') checkConnectionString(CALL, connection);
    else if (connection === null || typeof connection !== 'object') {
      throw new OptionsError(
        `${CALL}: give a connection string, a pg PoolConfig or a pg.Pool, got ${showValue(connection)}`,
      );
    } else if (connection.connectionString !== undefined) {
      checkConnectionString(CALL, connection.connectionString);
    }
    const config = poolConfigOf(connection, timeouts, o);
    this.#pool = new pg.Pool(config);
    this.#ownsPool = true;
    this.#connections = new Connections(this.#pool, describeTarget(config), timeouts, names);
    // An idle connection that the server drops (restart, failover) emits 'error' on the pool;
    // unheard, it would kill the process. The next query simply opens a new connection.
    this.#pool.on('error', () => {});
    this.#pool.on('connect', (client) => this.#connections.listen(client));
  }

  /**
   * Creates or upgrades the schema (also done on first use). Concurrent callers in any number
   * of processes are serialised by an advisory lock.
   * @returns the schema version.
   */
  migrate(): Promise<number> {
    return this.#migrate('PostgresStore.migrate');
  }

  protected async loadChecked(runId: string): Promise<StoredRun | null> {
    // One statement: head and entries come from the same snapshot. Rows as arrays: node-postgres
    // then makes no object per entry (~40% of the statement's time).
    const rows = await this.#run('load', (sql) => sql.arrays(this.#sql.load, [runId]));
    return storedRunOfRows(runId, rows);
  }

  /** One round trip: four statements sent at once, one transaction (postgres/open.ts). */
  protected override async openChecked(runId: string, claim: CheckedClaim): Promise<OpenedRun | null> {
    return claimWithin(claim, this.#now, async () => {
      for (let attempt = 0; ; attempt++) {
        const text = openText(`"${this.#schema}"`, this.#schema, runId, claim, this.#at());
        const outcome = openedOf(runId, claim, await this.#run('open', (sql) => sql.batch(text)));
        if ('opened' in outcome) return outcome.opened;
        if ('failed' in outcome) {
          if (outcome.lease) await this.releaseChecked(outcome.lease).catch(() => false);
          throw outcome.failed;
        }
        // The run changed between the statements, four times over: as busy as a claim would say.
        if (attempt >= REFUSAL_RETRIES) throw outcome.busy;
      }
    });
  }

  protected async summaryChecked(runId: string): Promise<RunSummary | null> {
    const { rows } = await this.#query<RunRow>('summary', this.#sql.summary, [runId]);
    const row = rows[0];
    return row ? summaryOf(row) : null;
  }

  protected async saveChecked(runId: string, w: RunWrite, expectedVersion: number, lease?: Lease): Promise<number> {
    const expiry = earliestExpiry(w.pendingCalls);
    return this.#saves.add({
      runId,
      status: w.status,
      head: w.head,
      from: w.from,
      append: w.append.slice(),
      pending: w.pendingCalls.length === 0 ? null : JSON.stringify(w.pendingCalls),
      expiry: expiry === null ? null : new Date(expiry).toISOString(),
      lease: lease === undefined ? undefined : { ...lease },
      agent: w.agent ?? null,
      relaxed: w.relaxed === true,
      base: w.base ?? null,
      expectedVersion,
    });
  }

  /** One save in a statement of its own: made, or refused with the reason read afterwards. */
  async #saveOne(save: SaveRow): Promise<number> {
    const { runId, from, expectedVersion, lease } = save;
    const at = this.#at();
    const values: unknown[] = [
      runId,
      save.status,
      save.head,
      from,
      save.append,
      save.pending,
      at,
      save.expiry,
      lease?.token ?? null,
      lease?.leaseMs ?? null,
      save.agent,
      save.relaxed,
      save.base,
    ];
    if (expectedVersion > 0) values.push(expectedVersion);
    const sql = expectedVersion === 0 ? this.#sql.insertRun : this.#sql.updateRun;
    // Creating a run with entries already stored cannot match anything: a conflict.
    const tries = expectedVersion > 0 || from === 0;
    // A refusal is decided atomically by the statement; reading why takes a second one. If the
    // cause has gone by then (a lease released meanwhile), nothing was written: try again.
    for (let attempt = 0; ; attempt++) {
      if (tries) {
        try {
          const { rows } = await this.#query<{ version: number }>('save', sql, values);
          if (rows[0]) return rows[0].version;
        } catch (error) {
          // The entries' primary key: someone appended at these indexes. Cannot happen while the
          // version check holds, but a duplicate is a conflict, never an overwrite.
          if (sqlStateOf((error as Error).cause) !== '23505') throw error;
        }
      }
      const why = await this.#refusal('save', runId, at);
      const refused = fenceError('save', runId, why, lease);
      if (refused) throw refused;
      const current = why.version === null ? null : { version: why.version, entries: why.entry_count ?? 0 };
      if (!tries || (current?.version ?? 0) !== expectedVersion || (current?.entries ?? 0) !== from) {
        throw saveConflict(runId, current, from, expectedVersion);
      }
      agentAfterSave(runId, why.agent, save.agent ?? undefined); // another agent's name: an OptionsError
      if (attempt >= REFUSAL_RETRIES) throw saveConflict(runId, current, from, expectedVersion);
    }
  }

  protected async listChecked({ status, expired, limit, agent }: ListOptions): Promise<RunSummary[]> {
    const values = [
      status ?? null,
      limit ?? null,
      expired ?? null,
      expired === undefined ? null : this.#at(),
      agent ?? null,
    ];
    const { rows } = await this.#query<RunRow>('list', this.#sql.list, values);
    return rows.map(summaryOf);
  }

  protected async deleteChecked(runId: string, expectedVersion?: number, lease?: Lease): Promise<boolean> {
    const at = this.#at();
    const values = [runId, expectedVersion ?? null, lease?.token ?? null, at];
    for (let attempt = 0; ; attempt++) {
      if (await this.#deleteRun(runId, values)) return true;
      const why = await this.#refusal('delete', runId, at);
      if (why.version === null) return false;
      const refused = fenceError('delete', runId, why, lease);
      if (refused) throw refused;
      if (expectedVersion !== undefined && why.version !== expectedVersion) {
        throw deleteConflict(runId, why.version, expectedVersion);
      }
      // Refused, then found deletable, four times over: another writer is changing the run as fast.
      if (attempt >= REFUSAL_RETRIES) throw deleteConflict(runId, why.version, expectedVersion ?? why.version);
    }
  }

  protected async claimChecked(runId: string, checked: CheckedClaim): Promise<Lease> {
    const { owner, leaseMs } = checked;
    const item = { runId, owner, leaseMs, process: checked.process && JSON.stringify(checked.process) };
    return claimWithin(checked, this.#now, async () => {
      for (let attempt = 0; ; attempt++) {
        // The first try in this turn's batch of claims (lease-batches.ts), a retry alone.
        const made = attempt === 0 ? await this.#leases.claim(item) : await this.#claimOne(item);
        const at = this.#at();
        if (made) return leaseOf(runId, recordOf(made), leaseMs);
        // Another owner's lease was live when the claim ran; who, and until when, takes a read.
        const { rows: held } = await this.#query<LeaseRow & { now: Date }>('claim', this.#sql.lease, [runId, at]);
        const row = held[0];
        if (row?.owner && row.expires_at && row.now < row.expires_at) {
          const { token, process } = recordOf(row);
          throw busyError('claim', runId, row.owner, row.expires_at.getTime(), undefined, { token, process });
        }
        // Freed between the two statements, four times over: a run claimed and released that fast is busy.
        if (attempt >= REFUSAL_RETRIES) {
          throw busyError('claim', runId, row?.owner ?? 'another owner', row?.expires_at ?? row?.now ?? new Date(0));
        }
      }
    });
  }

  protected async renewChecked(lease: Lease, length: number): Promise<Lease> {
    const values = [lease.runId, lease.token, this.#at(), length];
    const { rows } = await this.#query<LeaseRow>('renew', this.#sql.renew, values);
    if (rows[0]) return leaseOf(lease.runId, recordOf(rows[0]), length);
    const { rows: now } = await this.#query<LeaseRow>('renew', this.#sql.lease, [lease.runId, null]);
    throw leaseLost('renew', lease, now[0] ? recordOf(now[0]) : null);
  }

  /** One statement for all of them (sql.ts `renewRuns`): one round trip, one commit. */
  protected override async renewManyChecked(
    leases: readonly Lease[],
    lengths: readonly number[],
  ): Promise<(Lease | LeaseLostError)[]> {
    if (leases.length === 0) return [];
    const values = [leases.map((l) => l.runId), leases.map((l) => l.token), lengths, this.#at()];
    const { rows } = await this.#query<RenewedRow>('renewMany', this.#sql.renewRuns, values);
    return leases.map((lease, i) => {
      const row = rows[i] as RenewedRow;
      if (row.token !== null) return leaseOf(lease.runId, recordOf(row as LeaseRow), lengths[i] as number);
      const current =
        row.current_token === null
          ? null
          : { token: Number(row.current_token), owner: row.current_owner, expiresAt: null };
      return leaseLost('renew', lease, current);
    });
  }

  protected async releaseChecked(lease: Lease): Promise<boolean> {
    return this.#leases.release({ runId: lease.runId, token: lease.token });
  }

  /** One claim statement: the lease made, or null when another owner holds the run. */
  async #claimOne({ runId, owner, leaseMs, process }: ClaimTry): Promise<LeaseRow | null> {
    const values = [runId, owner, leaseMs, this.#at(), process];
    return (await this.#query<LeaseRow>('claim', this.#sql.claim, values)).rows[0] ?? null;
  }

  protected async queueDecisionChecked(runId: string, text: string, expectedVersion: number): Promise<number> {
    return queueIn(this.#query, this.#sql, runId, text, expectedVersion, this.#at());
  }

  protected async claimNextChecked(checked: CheckedClaimNext): Promise<{ lease: Lease; run: RunSummary } | null> {
    return claimNextIn(this.#query, this.#sql, checked, () => this.#at(), this.#turns);
  }

  protected async setGroupBudgetChecked(group: string, budget: GroupBudget | null): Promise<void> {
    await this.#groups.setBudget(group, budget);
  }

  protected async groupSpendChecked(group: string): Promise<GroupSpend> {
    return this.#groups.spend(group, null, this.#at());
  }

  /** One statement (`INSERT … ON CONFLICT DO UPDATE`): spends from every process add up exactly. */
  protected async spendGroupChecked(group: string, charge: Required<GroupCharge>): Promise<GroupSpend> {
    return this.#groups.spend(group, charge, this.#at());
  }

  protected async holdGroupChecked(group: string, request: GroupHoldRequest): Promise<GroupHoldResult> {
    return this.#groups.hold(group, request, this.#at());
  }

  protected async settleGroupChecked(group: string, settlement: CheckedSettlement): Promise<GroupSpend> {
    return this.#groups.settle(group, settlement, this.#at());
  }

  protected async joinGroupChecked(runId: string, group: string): Promise<void> {
    await this.#groups.join(runId, group);
  }

  protected async groupOfChecked(runId: string): Promise<string | null> {
    return this.#groups.groupOf(runId);
  }

  /** From every process on this schema: `LISTEN`/`NOTIFY` on a connection held while anyone watches. */
  async watch(listener: () => void): Promise<() => Promise<void>> {
    return this.#watch.add(listener);
  }

  /** Ends the pool the store created; a pool given to the constructor is left open. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#watch.close();
    this.#connections.close();
    await this.#ready?.catch(() => {});
    if (this.#ownsPool) await this.#pool.end();
  }

  #migrate(call: string): Promise<number> {
    if (!this.#ready) {
      const ready = this.#connections.use(call, true, (sql) => migrate(sql, this.#schema));
      // A failed attempt (server down) is not remembered: the next call tries again.
      ready.catch(() => {
        if (this.#ready === ready) this.#ready = null;
      });
      this.#ready = ready;
    }
    return this.#ready;
  }

  /** Runs one statement (the schema migrated first); `op` names the call in errors. */
  readonly #query: Query = (op, text, values) => this.#run(op, (sql) => sql.query(text, values));

  /** Runs `work` on a pooled connection, the schema migrated first; `op` names the call in errors. */
  async #run<T>(op: string, work: (sql: StoreSql) => Promise<T>): Promise<T> {
    const call = `PostgresStore.${op}`;
    await this.#migrate(call);
    return this.#connections.use(call, op !== 'load' && op !== 'list' && op !== 'summary', work);
  }

  /**
   * Deletes the run and then its entries, in one transaction: the entries in a statement of its
   * own, whose snapshot is taken once the run's row is gone, so it sees the entries of a save that
   * committed while the delete waited for that row (the delete statement's own snapshot would
   * not, and they would be left to collide with a run made again under the same id). A save or
   * a creation that comes later waits for the row (or its key) until the commit, and then writes
   * nothing or starts afresh. @returns whether the run was deleted.
   */
  #deleteRun(runId: string, values: unknown[]): Promise<boolean> {
    return this.#run('delete', async (sql) => {
      await sql.query('BEGIN', []);
      try {
        const { rowCount } = await sql.query(this.#sql.delete, values);
        if (rowCount) await sql.query(this.#sql.deleteEntries, [runId]);
        await sql.query('COMMIT', []);
        return Boolean(rowCount);
      } catch (error) {
        // Rolled back before the connection is pooled again; a failed rollback's error (a lost
        // connection) is the one thrown, and the connection is then dropped, not pooled.
        await sql.query('ROLLBACK', []);
        throw error;
      }
    });
  }

  /** The store's now for a statement: the injected clock's, or null for the database's. */
  #at(): string | null {
    return this.#now ? timestampOf(this.#now) : null;
  }

  /** Why a write of `runId` matched nothing: the run, its lease, and the store's now (`at`). */
  async #refusal(op: string, runId: string, at: string | null): Promise<RefusalRow> {
    const { rows } = await this.#query<RefusalRow>(op, this.#sql.refusal, [runId, at]);
    return rows[0] as RefusalRow;
  }
}
