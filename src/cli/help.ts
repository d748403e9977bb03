/** The program's `--help` epilogue: examples, where the store is, the exit codes. */
import { EXIT_MEANINGS } from './exit-codes.js';
import { DEFAULT_STORE } from './store-location.js';

/** Text shown after the command list of `tollgate --help`. */
export function programHelp(): string {
  const codes = EXIT_MEANINGS.map(([code, meaning]) => `  ${code}  ${meaning}`).join('\n');
  return `
Examples:
  $ tollgate run ./agents/support.js "Order A-1001 arrived broken, refund it" --run-id ticket-42
  $ tollgate runs --status awaiting_approval
  $ tollgate show ticket-42
  $ tollgate approve ticket-42 --call-id 'ticket-42:2#1@86a2a281216a0046d647d0bb5da7f245' --note "receipt checked"
  $ tollgate deny ticket-42 --note "refunds over $100 need a manager"
  $ tollgate resume ticket-42 --max-steps 12
  $ tollgate cancel ticket-42 --reason "customer withdrew the request"
  $ tollgate submit ./agents/support.js "Refund order A-1001" --run-id ticket-43
  $ tollgate worker ./agents/support.js --concurrency 8
  $ tollgate approve ticket-43 --queue --note "receipt checked"
  $ TOLLGATE_INBOX_TOKEN=… tollgate serve ./agents/support.js --port 8470

Store: --store <path|url>, else $TOLLGATE_STORE, else ./${DEFAULT_STORE} (an SQLite file in the
current directory). A postgres:// URL uses Postgres; its password is never printed.
Agent modules: JavaScript, or TypeScript (.ts, .mts, .cts) when tsx is installed.

Exit codes:
${codes}`;
}
