/** Connecting a client to the test servers: in memory, and over Streamable HTTP on loopback. */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { HistoryEntry } from '../../src/index.js';

export interface Connected {
  client: Client;
  close(): Promise<void>;
}

/** A client connected to `server` through a linked pair of in-memory transports. */
export async function inMemory(server: McpServer | Server): Promise<Connected> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'tollgate-test', version: '1.0.0' });
  await client.connect(clientSide);
  return {
    client,
    close: async () => {
      await client.close();
      await server.close();
    },
  };
}

/** A client connected to `server` over Streamable HTTP, served by node:http on 127.0.0.1. */
export async function overHttp(server: McpServer | Server): Promise<Connected> {
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID() });
  await server.connect(transport);
  const http = createServer((req, res) => void transport.handleRequest(req, res));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  const client = new Client({ name: 'tollgate-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
  return {
    client,
    close: async () => {
      await client.close();
      await server.close();
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    },
  };
}

/** The tool entries of a history: what each call's result or error was. */
export function outcomes(history: readonly HistoryEntry[]): ({ result: unknown } | { error: string })[] {
  return history.flatMap((entry): ({ result: unknown } | { error: string })[] => {
    if (entry.role !== 'tool') return [];
    return 'error' in entry ? [{ error: entry.error }] : [{ result: entry.result }];
  });
}
