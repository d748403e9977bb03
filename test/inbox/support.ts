/** An inbox on loopback for the API tests, and a small HTTP client for it. */
import { createInboxServer, type InboxOptions, type InboxServer } from '../../src/inbox/index.js';

export interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

/** Starts an inbox on 127.0.0.1, on a free port. */
export async function startInbox(options: InboxOptions): Promise<{ inbox: InboxServer; url: string }> {
  const inbox = createInboxServer(options);
  const url = await inbox.listen({ port: 0 });
  return { inbox, url };
}

/** One request; the body is sent as JSON unless it is a string. */
export async function call(
  url: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined;
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(`${url}${path}`, { method, headers, ...(body === undefined ? {} : { body }) });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: the page's files
  }
  return { status: response.status, headers: response.headers, body: parsed };
}
