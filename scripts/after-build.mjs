// After tsc: what it does not do. The inbox page's static files (src/inbox/page) are not
// TypeScript, so they are copied beside the compiled server, which reads them from ./page/; and
// the `tollgate` command is made executable (tsc writes its files 0644, and `npx tollgate` in this
// clone runs the file itself).
import { chmodSync, cpSync } from 'node:fs';

cpSync('src/inbox/page', 'dist/src/inbox/page', { recursive: true });
chmodSync('dist/src/cli/bin.js', 0o755);
