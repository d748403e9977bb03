/**
 * The commands printed when a run waits for approval and nobody can be asked here: complete and
 * runnable from any directory of the project (absolute paths, the call id that was shown; `npx`
 * finds the project's `tollgate` where the shell does not, and `--no-install` keeps it from fetching
 * a package of that name from the registry elsewhere), yet never with a password. A store whose URL holds one is named as `--store "$TOLLGATE_STORE"`, with its
 * redacted URL beside it: the command works once TOLLGATE_STORE holds the real URL.
 */
import type { StoreLocation } from './store-location.js';

/** Quotes for a POSIX shell, only when needed. */
export const shellQuote = (s: string) => (/^[\w./:@%+=,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** The lines to print: the approve and deny commands for `callId`, and a note when the store is secret. */
export function laterCommands(runId: string, callId: string, location: StoreLocation, agentPath: string): string[] {
  const store = location.secret ? '"$TOLLGATE_STORE"' : shellQuote(location.target);
  const where = `--call-id ${shellQuote(callId)} --store ${store} --agent ${shellQuote(agentPath)}`;
  const lines = [
    `npx --no-install tollgate approve ${shellQuote(runId)} ${where} --note '…'`,
    `npx --no-install tollgate deny ${shellQuote(runId)} ${where} --note '…'`,
  ];
  if (location.secret) {
    lines.push(`(with TOLLGATE_STORE set to ${location.display}: the password is not printed)`);
  }
  return lines;
}
