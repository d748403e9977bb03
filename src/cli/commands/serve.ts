/**
 * `tollgate serve [modules…]`: the web approval inbox on the store, until SIGINT or SIGTERM.
 * It records decisions; a `tollgate worker` applies them. Tokens come from the environment or a
 * file, never from the command line (where `ps` would show them).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import type { AgentDefinition } from '../../define.js';
import { type InboxAuth, MIN_TOKEN_LENGTH } from '../../inbox/auth.js';
import { loadAgentModule } from '../agent-module.js';
import { CliUsageError } from '../exit-codes.js';
import { refuseMissing } from '../open-store.js';
import { errOut, out } from '../output.js';
import { importNeeding } from '../self.js';
import { type Act, approver, type Common, jsonOption, storeOption, withStore } from './shared.js';

/** The inbox's web server: optional peers of the package. */
export const INBOX_NEEDS = {
  packages: ['hono', '@hono/node-server'],
  who: 'tollgate serve',
  install: 'npm install hono@4 @hono/node-server@2',
};

interface ServeFlags extends Common {
  port: number;
  host: string;
  usersFile?: string;
  proxyHeader?: string;
  as?: string;
  origin?: string[];
  create?: boolean;
}

const port = (value: string) => {
  const n = Number(value);
  if (value.trim() === '' || !Number.isSafeInteger(n) || n < 0 || n > 65_535) {
    throw new InvalidArgumentError('expected a port from 0 to 65535 (0: any free port)');
  }
  return n;
};

/** Each `--origin` adds its origin to those before it. */
const origin = (value: string, previous: string[] | undefined) => {
  if (!/^https?:\/\//i.test(value) || !URL.canParse(value)) {
    throw new InvalidArgumentError('expected an origin such as https://approvals.example.com');
  }
  return [...(previous ?? []), value];
};

/** `tollgate serve`. */
export function serveCommand(act: Act): Command {
  return new Command('serve')
    .description('serve the web approval inbox for the store until SIGINT/SIGTERM (a worker applies the decisions)')
    .argument('[modules...]', 'agent modules: with them, edited arguments are checked against the tools’ schemas')
    .option('--port <port>', 'port to listen on (0: any free port)', port, 8470)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--users-file <file>', 'JSON file of approvers and their tokens: { "dana": "<token>", … }')
    .option(
      '--proxy-header <name>',
      'trust this header, set by a reverse proxy, for the user name (e.g. X-Forwarded-User)',
    )
    .option(
      '--origin <url>',
      'the public origin a reverse proxy serves the inbox under (e.g. https://approvals.example.com); repeatable',
      origin,
    )
    .option('--create', 'create the SQLite store if it does not exist (without it, a missing store is refused)')
    .addOption(
      new Option(
        '--as <name>',
        'the approver $TOLLGATE_INBOX_TOKEN signs in as (default: $TOLLGATE_USER, else the OS user)',
      ),
    )
    .addOption(storeOption())
    .addOption(jsonOption())
    .addHelpText(
      'after',
      `
Authentication (one of):
  $TOLLGATE_INBOX_TOKEN   one approver's token (at least 16 characters)
  --users-file <file>     one token per approver
  --proxy-header <name>   a reverse proxy authenticates; bind to 127.0.0.1 behind it
  none of these           a random token is made and a sign-in link printed

Example:
  $ TOLLGATE_INBOX_TOKEN=… tollgate serve ./agents/support.js --port 8470
  $ tollgate worker ./agents/support.js     # applies what approvers decide`,
    )
    .action(act(serve));
}

/** As the inbox checks a user name (src/inbox/auth.ts). */
const MAX_NAME = 256;

/** What a JSON value is, never what it holds: "an array", "a string", … */
function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  return typeof value === 'number' ? 'a number' : 'a string';
}

/**
 * Where JSON.parse stopped, as "line L, column C", from the position its message gives (Node 20
 * and 22 give one for most errors). The message itself is never shown: it quotes the text, and a
 * users file's text is tokens. Null when it gives no position.
 */
function whereOf(error: unknown, text: string): string | null {
  const at = /position (\d+)/.exec(error instanceof Error ? error.message : '');
  if (!at) return null;
  const before = text.slice(0, Number(at[1])).split('\n');
  return `line ${before.length}, column ${(before.at(-1) as string).length + 1}`;
}

/** The approvers of a `--users-file`, checked; its errors say what is wrong, never what the file holds. */
function usersOf(file: string): Record<string, string> {
  const bad = (why: string) => new CliUsageError(`--users-file ${file}: ${why}`);
  const shape = 'it must map each approver\u2019s name to their token, { "dana": "<token>", \u2026 }';
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    // A file system error names the path, never the content.
    throw bad((error as Error).message.split('\n')[0] as string);
  }
  if (text.startsWith('\uFEFF')) text = text.slice(1); // a byte order mark some editors write
  let users: unknown;
  try {
    users = JSON.parse(text);
  } catch (error) {
    const where = whereOf(error, text);
    throw bad(`not valid JSON${where ? ` (at ${where})` : ''}`);
  }
  if (users === null || typeof users !== 'object' || Array.isArray(users)) {
    throw bad(`${shape}; this file holds ${kindOf(users)}`);
  }
  const entries = Object.entries(users);
  if (entries.length === 0) throw bad(`lists no approvers: ${shape}`);
  const byToken = new Map<string, string>();
  for (const [index, [name, token]] of entries.entries()) {
    const which = `approver ${index + 1} of ${entries.length}`;
    if (name.trim() === '') throw bad(`${which}: the name is empty`);
    if (name.length > MAX_NAME) throw bad(`${which}: the name is longer than ${MAX_NAME} characters`);
    if ([...name].some((c) => (c.codePointAt(0) as number) < 0x20 || c === '\x7f')) {
      throw bad(`${which}: the name holds a control character`);
    }
    // A name that could be a token, with a value that is no token, may be a file written the
    // wrong way round ({ "<token>": "dana" }): then the name is not shown either.
    const who = `the token of ${name.length >= MIN_TOKEN_LENGTH && !/\s/.test(name) ? which : JSON.stringify(name)}`;
    if (typeof token !== 'string') throw bad(`${who} is ${kindOf(token)}, not a string; ${shape}`);
    if (token.length < MIN_TOKEN_LENGTH) {
      throw bad(`${who} is shorter than ${MIN_TOKEN_LENGTH} characters (a token is a random secret); ${shape}`);
    }
    if (/\s/.test(token)) throw bad(`${who} holds a space or a line break`);
    const other = byToken.get(token);
    if (other !== undefined) {
      throw bad(
        `${JSON.stringify(other)} and ${JSON.stringify(name)} have the same token: give each approver their own`,
      );
    }
    byToken.set(token, name);
  }
  return users as Record<string, string>;
}

function authOf(o: ServeFlags): { auth: InboxAuth; generated: string | null; mode: string } {
  if (o.usersFile !== undefined && o.proxyHeader !== undefined) {
    throw new CliUsageError('--users-file and --proxy-header cannot go together: choose one way to authenticate');
  }
  if (o.proxyHeader !== undefined) return { auth: { proxyHeader: o.proxyHeader }, generated: null, mode: 'proxy' };
  if (o.usersFile !== undefined) {
    return { auth: { users: usersOf(o.usersFile) }, generated: null, mode: 'users' };
  }
  const user = approver(o.as);
  const fromEnv = process.env.TOLLGATE_INBOX_TOKEN;
  if (fromEnv) return { auth: { token: fromEnv, user }, generated: null, mode: 'token' };
  const token = randomBytes(24).toString('base64url');
  return { auth: { token, user }, generated: token, mode: 'token' };
}

async function serve(modules: string[], o: ServeFlags): Promise<number> {
  const agents: AgentDefinition[] = [];
  for (const module of modules) agents.push(await loadAgentModule(module));
  const { auth, generated, mode } = authOf(o);
  // Loaded here: the inbox's web server (hono) is an optional peer, needed by this command only.
  const { createInboxServer } = await importNeeding(() => import('../../inbox/server.js'), INBOX_NEEDS);
  // A mistyped --store must not become a new, empty store: approvers would see an empty inbox.
  return withStore(o, { create: o.create === true }, async (opened) => {
    refuseMissing(opened);
    const inbox = createInboxServer({ store: opened.store, auth, agents, ...(o.origin ? { origins: o.origin } : {}) });
    const stopped = new Promise<void>((done) => {
      const stop = () => void inbox.close().finally(done);
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    const url = await inbox.listen({ port: o.port, host: o.host });
    const signIn = generated ? `${url}/#token=${generated}` : null;
    if (o.json) {
      out(`${JSON.stringify({ url, store: opened.location.display, auth: mode, ...(signIn ? { signIn } : {}) })}\n`);
    } else {
      out(`inbox ${url} · store ${opened.location.display} · auth ${mode}\n`);
      if (signIn) out(`sign in: ${signIn}\n`);
      out('decisions are recorded in the store: run `tollgate worker <modules…>` to apply them\n');
    }
    if (mode === 'proxy' && !/^(127\.|localhost$|::1$|\[::1\]$)/.test(o.host)) {
      errOut(
        `warning: --proxy-header trusts any client that can reach ${o.host}: listen on 127.0.0.1 behind the proxy\n`,
      );
    }
    await stopped;
    return 0;
  });
}
