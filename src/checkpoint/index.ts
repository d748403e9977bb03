/**
 * The checkpoint codec: the actor's persisted snapshot in a named, versioned envelope, as
 * canonical JSON, validated on every read. One module per concern: the schema, the rules that tie
 * a context to its state, encoding, decoding, the journal form stores keep, and the versions with
 * their migrations.
 */

export { consistencyProblem, expectedChildren, statusOfValue } from './consistency.js';
export { decodeCheckpoint, nestingDepth, plainEntry } from './decode.js';
export { canonicalEntry, EntryTexts, encodeCheckpoint } from './encode.js';
export { type Base, baseText, deltaText, headParts, headText, resumedHead } from './head-delta.js';
export { decodeStored, entryOf, headOf, joinRun } from './journal-form.js';
export { entrySchema, type PersistedRun } from './schema.js';
export { CHECKPOINT_FORMAT, CHECKPOINT_VERSION, migrate, READABLE_VERSIONS } from './versions.js';
