/**
 * `watch` for the Postgres store: one connection of the store's, held while anyone watches,
 * `LISTEN`s on the channel every store writes to with `pg_notify` (sql.ts) when a run may have
 * become runnable — in any process, on any machine. Notifications of other schemas are ignored.
 * A lost connection is made again after a pause, and the listeners are called once then, since
 * notifications sent meanwhile were missed. A worker polls as well: a watch only wakes it sooner.
 */
import type { Notification, PoolClient } from 'pg';
import { CHANNEL } from './sql.js';

/** The pause before listening again after the connection was lost. */
const RELISTEN_MS = 1_000;

/** The listeners of one store, and the connection that hears for them. */
export class Watch {
  readonly #listeners = new Set<() => void>();
  readonly #connect: () => Promise<PoolClient>;
  readonly #schema: string;
  #client: PoolClient | null = null;
  #connecting: Promise<void> | null = null;
  #retry: NodeJS.Timeout | undefined;
  #closed = false;

  /** `connect`: a connection of the store's own (`Connections.acquire`); `schema`: the unquoted name. */
  constructor(connect: () => Promise<PoolClient>, schema: string) {
    this.#connect = connect;
    this.#schema = schema;
  }

  /** Adds `listener` once the connection listens. @returns a function that removes it. */
  async add(listener: () => void): Promise<() => Promise<void>> {
    const own = () => listener();
    this.#listeners.add(own);
    try {
      await this.#listen();
    } catch (error) {
      this.#listeners.delete(own);
      throw error;
    }
    return async () => {
      this.#listeners.delete(own);
      if (this.#listeners.size === 0) this.#stop();
    };
  }

  /** Stops listening for good (the store is closing). */
  close(): void {
    this.#closed = true;
    this.#listeners.clear();
    this.#stop();
  }

  #listen(): Promise<void> {
    if (this.#client) return Promise.resolve();
    this.#connecting ??= this.#start().finally(() => {
      this.#connecting = null;
    });
    return this.#connecting;
  }

  async #start(): Promise<void> {
    const client = await this.#connect();
    client.on('notification', (message: Notification) => {
      if (message.channel === CHANNEL && message.payload === this.#schema) this.#notify();
    });
    client.on('error', () => this.#lost(client));
    client.on('end', () => this.#lost(client));
    try {
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (error) {
      client.release(true);
      throw error;
    }
    this.#client = client;
    // Everyone stopped (or the store closed) while the connection was being made.
    if (this.#listeners.size === 0) this.#stop();
  }

  #lost(client: PoolClient): void {
    if (this.#client !== client) return;
    this.#client = null;
    client.release(true);
    this.#again();
  }

  /** Listens again after a pause while anyone watches; then calls them, as they may have missed a notification. */
  #again(): void {
    if (this.#closed || this.#listeners.size === 0 || this.#retry) return;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      this.#listen().then(
        () => this.#notify(),
        () => this.#again(),
      );
    }, RELISTEN_MS);
    this.#retry.unref();
  }

  #stop(): void {
    clearTimeout(this.#retry);
    this.#retry = undefined;
    const client = this.#client;
    this.#client = null;
    // Closed, not pooled again: a pooled connection would go on receiving the notifications.
    client?.release(true);
  }

  #notify(): void {
    for (const listener of this.#listeners) {
      try {
        listener();
      } catch {
        // A watcher's failure is its own.
      }
    }
  }
}
