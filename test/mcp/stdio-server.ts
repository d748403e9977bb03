/**
 * The orders server over stdio, run in a child process by stdio.int.test.ts: `node --import tsx
 * test/mcp/stdio-server.ts <file>`. Each call the server sees is appended to <file> as a JSON line
 * (stdout is the protocol's channel).
 */
import { appendFileSync } from 'node:fs';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ordersServer } from './servers.js';

const file = process.argv[2];
if (!file) throw new Error('usage: stdio-server.ts <file for the calls seen>');
const { server } = ordersServer((call) => appendFileSync(file, `${JSON.stringify(call)}\n`));
await server.connect(new StdioServerTransport());
