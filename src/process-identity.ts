/**
 * Which process holds a lease, recorded with the claim, and whether that process is provably dead.
 *
 * A lease lapses `leaseMs` after its holder's last renewal, so a crashed owner keeps its runs that
 * long. On the holder's own machine (Linux) its death can be proven instead, and the run released at
 * once. A pid alone proves nothing: after a reboot, or in another pid namespace (a container), the
 * same number is another process, and the kernel reuses pids. So the identity is the boot (boot id),
 * the pid namespace, the pid and the process's start time (clock ticks after boot, field 22 of
 * `/proc/<pid>/stat`): a process with that pid but another start time is a newer one. Where any of
 * these cannot be read (not Linux, no `/proc`), death is never proven: the lease is left to lapse.
 */
import { readFileSync, statSync } from 'node:fs';
import { hostname } from 'node:os';

/** The process that holds a lease, as its claim recorded it. */
export interface ProcessIdentity {
  /** The machine's host name (`os.hostname()`). */
  host: string;
  /** This boot of the machine (`/proc/sys/kernel/random/boot_id`); null where it cannot be read. */
  bootId: string | null;
  /** The inode of the process's pid namespace (`/proc/self/ns/pid`); null where it cannot be read. */
  pidNamespace: string | null;
  /** The process id, in that namespace. */
  pid: number;
  /** When the process started, in clock ticks after boot (`/proc/<pid>/stat` field 22); null where unknown. */
  startTime: string | null;
}

/** How the death check looks at processes. Replaced in tests. */
export interface ProcessProbe {
  /** A `/proc` file's text; null when it does not exist; undefined when it cannot be read. */
  read(path: string): string | null | undefined;
  /** Whether a process with this pid exists in this pid namespace, as `kill(pid, 0)` tells. */
  exists(pid: number): boolean;
}

const code = (error: unknown) => (error as NodeJS.ErrnoException | null)?.code;

const system: ProcessProbe = {
  read(path) {
    try {
      return readFileSync(path, 'utf8');
    } catch (error) {
      return code(error) === 'ENOENT' ? null : undefined;
    }
  },
  exists(pid) {
    try {
      process.kill(pid, 0);
      return true;
    } catch (error) {
      return code(error) !== 'ESRCH'; // EPERM: it exists, another user's
    }
  },
};

/**
 * The state (field 3) and start time (field 22) of a `/proc/<pid>/stat` line, or null. The command
 * name (field 2) is in parentheses and may hold spaces and parentheses itself: the fields are
 * counted after its last `)`.
 */
export function statFields(text: string): { state: string; startTime: string } | null {
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const state = fields[0];
  const startTime = fields[19];
  if (!state || !startTime || !/^\d+$/.test(startTime)) return null;
  return { state, startTime };
}

function pidNamespace(): string | null {
  try {
    return String(statSync('/proc/self/ns/pid').ino);
  } catch {
    return null;
  }
}

let self: ProcessIdentity | undefined;

/**
 * This process's identity, read once (a process keeps its pid, namespace and start time for life).
 * @example
 * const lease = await store.claim(runId, { owner, leaseMs: 30_000, process: thisProcess() });
 */
export function thisProcess(): ProcessIdentity {
  if (self) return self;
  const stat = system.read('/proc/self/stat');
  self = {
    host: hostname(),
    bootId: system.read('/proc/sys/kernel/random/boot_id')?.trim() || null,
    pidNamespace: pidNamespace(),
    pid: process.pid,
    startTime: typeof stat === 'string' ? (statFields(stat)?.startTime ?? null) : null,
  };
  return self;
}

/**
 * Whether the process `holder` is dead, proven from this one: same host, same boot, same pid
 * namespace, and its pid is gone, is a zombie, or is now a process that started at another time.
 * False whenever it cannot be proven (another machine, boot or namespace; an identity or a system
 * that lacks a field; a `/proc` that hides other users' processes): a lease is then left to lapse,
 * never released early.
 * @param me this process (a test gives another)
 * @param probe how processes are looked at (a test gives another)
 * @example
 * // What Agent.load does with a RunBusyError: release exactly that lease, then claim.
 * if (busy.token !== null && provablyDead(busy.holderProcess)) {
 *   await store.release({ runId, owner: busy.holder, token: busy.token, expiresAt: busy.until, leaseMs: 1 });
 * }
 */
export function provablyDead(
  holder: ProcessIdentity | null | undefined,
  me: ProcessIdentity = thisProcess(),
  probe: ProcessProbe = system,
): boolean {
  if (!holder || holder.startTime === null || me.bootId === null || me.pidNamespace === null) return false;
  if (!Number.isSafeInteger(holder.pid) || holder.pid < 1) return false; // kill(0) would signal a group
  if (holder.host !== me.host || holder.bootId !== me.bootId || holder.pidNamespace !== me.pidNamespace) return false;
  const text = probe.read(`/proc/${holder.pid}/stat`);
  // Absent from /proc: gone, unless /proc hides it (mounted with hidepid), which the signal tells.
  if (text === null) return !probe.exists(holder.pid);
  const now = text === undefined ? null : statFields(text);
  if (!now) return false;
  // A zombie (Z) has exited and only waits for its parent to read its status; X is on its way out.
  return now.startTime !== holder.startTime || now.state === 'Z' || now.state === 'X';
}
