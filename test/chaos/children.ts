/**
 * The chaos suite's child processes as the parent sees them: started with their config, their
 * JSON-line events heard (and awaited), stopped. A SIGKILLed child may leave a line cut short; it
 * is ignored.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { TcpProxy } from '../stores/tcp-proxy.js';
import type { ChildConfig } from './child.js';

export interface Child {
  process: ChildProcess;
  pid: number;
  ready: Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: string[];
  /** Killed or being stopped by the parent: its exit is expected. */
  ending: boolean;
  /** Paused, or partitioned, or about to be: not a target for another fault. */
  hurt: boolean;
  /** Calls of side effects in flight in it (by tool), as it reported them. */
  inCall: Map<string, number>;
  proxy: TcpProxy | null;
  /** Writes one line to its stdin (a command), unless it is gone. */
  tell(line: string): void;
  /** The next event of `type` it prints, or null after `timeoutMs` or its exit. */
  next(type: string, timeoutMs: number): Promise<{ type: string } | null>;
}

/**
 * Starts `command` with `config` as its argument; `onEvent` hears every event it prints;
 * `onExit` hears an exit the parent did not cause.
 */
export function spawnChild<E extends { type: string }>(
  command: readonly string[],
  config: ChildConfig,
  onEvent: (event: E, child: Child) => void,
  onExit: (child: Child, why: string) => void,
): Child {
  const [cmd, ...args] = command as [string, ...string[]];
  const p = spawn(cmd, [...args, JSON.stringify(config)], { stdio: ['pipe', 'pipe', 'pipe'] });
  p.stdin?.on('error', () => {}); // a write to a killed child
  const waiting = new Set<(event: E | null) => void>();
  let ready: () => void = () => {};
  const child: Child = {
    process: p,
    pid: p.pid ?? -1,
    ready: new Promise((resolve) => {
      ready = resolve;
    }),
    exited: new Promise((resolve) => p.on('exit', (code, signal) => resolve({ code, signal }))),
    stderr: [],
    ending: false,
    hurt: false,
    inCall: new Map(),
    proxy: null,
    tell(line) {
      if (p.exitCode === null && p.signalCode === null) p.stdin?.write(`${line}\n`);
    },
    next(type, timeoutMs) {
      return new Promise((resolve) => {
        const timer = setTimeout(() => done(null), timeoutMs);
        const done = (event: E | null) => {
          if (event !== null && event.type !== type) return;
          clearTimeout(timer);
          waiting.delete(done);
          resolve(event);
        };
        waiting.add(done);
      });
    },
  };
  p.stderr?.on('data', (chunk: Buffer) => child.stderr.push(chunk.toString()));
  createInterface({ input: p.stdout! }).on('line', (line) => {
    let event: E;
    try {
      event = JSON.parse(line) as E;
    } catch {
      return;
    }
    if (event.type === 'ready') ready();
    onEvent(event, child);
    for (const w of [...waiting]) w(event);
  });
  void child.exited.then(({ code, signal }) => {
    ready();
    for (const w of [...waiting]) w(null);
    if (!child.ending)
      onExit(child, `${child.pid} exited by itself (${signal ?? code}): ${child.stderr.join('').slice(-2_000)}`);
  });
  return child;
}

/** SIGTERM (workers stop gracefully), SIGKILL after `graceMs`; why it did not exit 0, or null. */
export async function stopChild(child: Child, graceMs: number): Promise<string | null> {
  child.ending = true;
  child.process.kill('SIGCONT');
  child.process.kill('SIGTERM');
  const timer = setTimeout(() => child.process.kill('SIGKILL'), graceMs);
  const { code, signal } = await child.exited;
  clearTimeout(timer);
  await child.proxy?.close();
  return code === 0
    ? null
    : `${child.pid} did not stop cleanly (${signal ?? code}): ${child.stderr.join('').slice(-2_000)}`;
}
