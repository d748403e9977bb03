/**
 * A TCP proxy for fault tests: it sits between a store and its database server and breaks the
 * network on command. `cut()` destroys every live connection (a server crash, a reset);
 * `stall()` keeps the sockets open but drops every byte from then on, both ways, new
 * connections included (a black-holed network: packets dropped, nobody answers). `heal()` lets
 * new bytes through again. `onClientBytes` watches what the client sends, so a test can cut or
 * stall at an exact moment: just as a save's statement goes out.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

/** What to do with a chunk the client sent: pass it on, drop it and cut, or drop it and stall. */
export type Verdict = 'forward' | 'cut' | 'stall' | 'forward-then-cut';

interface Pair {
  client: Socket;
  server: Socket;
}

export class TcpProxy {
  readonly #listener: Server;
  readonly #pairs = new Set<Pair>();
  #stalled = false;
  /** Every connection the proxy accepted, cut ones included. */
  accepted = 0;
  /** Decides each client chunk's fate; the default passes everything on. */
  onClientBytes: (chunk: Buffer) => Verdict = () => 'forward';

  private constructor(
    listener: Server,
    readonly port: number,
  ) {
    this.#listener = listener;
  }

  /** Listens on an ephemeral port of 127.0.0.1 and forwards to `target`. */
  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    let proxy: TcpProxy | null = null;
    const listener = createServer((client) => {
      if (proxy) proxy.#accept(client, target);
      else client.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const address = listener.address();
    if (address === null || typeof address === 'string') throw new Error('the proxy has no TCP port');
    proxy = new TcpProxy(listener, address.port);
    return proxy;
  }

  /** `url` with its host and port replaced by the proxy's. */
  urlFor(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  /** The connections open now. */
  get open(): number {
    return this.#pairs.size;
  }

  /** Destroys every live connection, both ends, at once: the client sees the server vanish. */
  cut(): void {
    for (const pair of this.#pairs) this.#drop(pair);
  }

  /** From now on every byte is dropped, both ways, on old and new connections; sockets stay open. */
  stall(): void {
    this.#stalled = true;
  }

  /** Bytes flow again (on connections that are still open, and on new ones). */
  heal(): void {
    this.#stalled = false;
    this.onClientBytes = () => 'forward';
  }

  /** Cuts everything and stops listening. */
  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.#listener.close(() => resolve()));
  }

  #accept(client: Socket, target: { host: string; port: number }): void {
    this.accepted++;
    const server = connect(target.port, target.host);
    const pair = { client, server };
    this.#pairs.add(pair);
    // Errors end the pair; a fault test must not die of its own proxy's resets.
    client.on('error', () => this.#drop(pair));
    server.on('error', () => this.#drop(pair));
    client.on('close', () => this.#drop(pair));
    server.on('close', () => this.#drop(pair));
    client.on('data', (chunk: Buffer) => {
      if (this.#stalled) return;
      const verdict = this.onClientBytes(chunk);
      if (verdict === 'cut') return this.#drop(pair);
      if (verdict === 'stall') return this.stall();
      // Cut once the chunk is handed to the kernel: the server gets the statement, the client no answer.
      server.write(chunk, verdict === 'forward-then-cut' ? () => this.#drop(pair) : undefined);
    });
    server.on('data', (chunk: Buffer) => {
      if (!this.#stalled) client.write(chunk);
    });
    // A half-close is forwarded only while the network works: a black hole swallows FINs too.
    client.on('end', () => {
      if (!this.#stalled) server.end();
    });
    server.on('end', () => {
      if (!this.#stalled) client.end();
    });
  }

  #drop(pair: Pair): void {
    if (!this.#pairs.delete(pair)) return;
    pair.client.destroy();
    pair.server.destroy();
  }
}
