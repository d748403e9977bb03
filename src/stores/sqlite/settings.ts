/**
 * What `SqliteStore.settings` returns. In a module of its own, free of the driver's types, so
 * that the store's declarations type-check for users without `@types/better-sqlite3`.
 */
/** A connection's settings as SQLite reports them, and the schema version of the file. */
export interface SqliteSettings {
  journalMode: string;
  synchronous: string;
  busyTimeoutMs: number;
  schemaVersion: number;
}
