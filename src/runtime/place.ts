/**
 * Where a stored run lives, as the Agent hands it to its run actor. A module of types only, apart
 * from the actor: the Agent's declarations name it, and must not load XState's.
 */
import type { LeaseTerms } from '../options.js';
import type { CheckpointStore, Lease } from '../store/contract.js';

/** Where a stored run lives: its store, the version read, what is stored already, and its lease. */
export interface StoredPlace {
  store: CheckpointStore;
  version: number;
  stored: number;
  head: string | null;
  /** The stored base a delta `head` was written against (`StoredRun.base`); absent or null: none. */
  base?: string | null;
  lease: LeaseTerms;
  /** The lease `Agent.load` claimed before it read the run; null: claimed before the first save. */
  claimed: Lease | null;
  /** The run's budget group (joined before the first save); absent or null: none. */
  group?: string | null;
}
