// The inbox page's static files (src/inbox/page) are not TypeScript, so tsc does not emit them:
// `npm run build` copies them beside the compiled server, which reads them from ./page/.
import { cpSync } from 'node:fs';

const [from = 'src/inbox/page', to = 'dist/src/inbox/page'] = process.argv.slice(2);
cpSync(from, to, { recursive: true });
