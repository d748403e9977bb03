/**
 * A lease holder's process, and when its death is proven (src/process-identity.ts): on `/proc` as
 * a probe the test writes, so each case (a pid gone, reused, a zombie, hidden by hidepid, another
 * boot or namespace, a platform without `/proc`) is exact. The real kill of a real holder is in
 * test/crash/dead-holder.int.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  type ProcessIdentity,
  type ProcessProbe,
  provablyDead,
  statFields,
  thisProcess,
} from '../src/process-identity.js';

const me: ProcessIdentity = { host: 'box', bootId: 'boot-1', pidNamespace: '4026531836', pid: 100, startTime: '500' };
const holder: ProcessIdentity = { ...me, pid: 4242, startTime: '9000' };

/** A `/proc` holding these `stat` lines by pid; `hidden`: pids that exist but that `/proc` does not show. */
function probe(stats: Record<number, string>, hidden: number[] = []): ProcessProbe & { signalled: number[] } {
  const signalled: number[] = [];
  return {
    signalled,
    read: (path) => {
      const pid = Number(/^\/proc\/(\d+)\/stat$/.exec(path)?.[1]);
      return stats[pid] ?? null;
    },
    exists: (pid) => {
      signalled.push(pid);
      return stats[pid] !== undefined || hidden.includes(pid);
    },
  };
}

/** A stat line with this state and start time (field 22), and a command name that would fool a naive split. */
const stat = (pid: number, state: string, start: string) =>
  `${pid} (a (b) c) ${state} 1 ${pid} ${pid} 0 -1 4194304 ${Array(12).fill('0').join(' ')} ${start} 3133440 392 0`;

describe('provablyDead', () => {
  it('reads state and start time after the last parenthesis of the command name', () => {
    expect(statFields(stat(7, 'S', '183909'))).toEqual({ state: 'S', startTime: '183909' });
    expect(statFields('garbage')).toBeNull();
  });

  it('a holder on this host, boot and namespace whose pid is gone (and kill says so) is dead', () => {
    const p = probe({});
    expect(provablyDead(holder, me, p)).toBe(true);
    expect(p.signalled).toEqual([4242]);
  });

  it('its pid now another process (another start time): dead; a zombie: dead; the same process, running or stopped: alive', () => {
    expect(provablyDead(holder, me, probe({ 4242: stat(4242, 'S', '9999') }))).toBe(true);
    expect(provablyDead(holder, me, probe({ 4242: stat(4242, 'Z', '9000') }))).toBe(true);
    expect(provablyDead(holder, me, probe({ 4242: stat(4242, 'S', '9000') }))).toBe(false);
    expect(provablyDead(holder, me, probe({ 4242: stat(4242, 'T', '9000') }))).toBe(false); // SIGSTOP: paused, alive
  });

  it('a pid /proc hides (hidepid) but that exists is not proven dead', () => {
    expect(provablyDead(holder, me, probe({}, [4242]))).toBe(false);
  });

  it('never from another host, boot or pid namespace, whatever this /proc says', () => {
    for (const other of [{ host: 'other' }, { bootId: 'boot-2' }, { pidNamespace: '4026532000' }]) {
      expect(provablyDead({ ...holder, ...other }, me, probe({}))).toBe(false);
    }
  });

  it('never where a field is unknown: no start time recorded, or a platform without boot id or namespace', () => {
    expect(provablyDead({ ...holder, startTime: null }, me, probe({}))).toBe(false);
    expect(provablyDead(holder, { ...me, bootId: null }, probe({}))).toBe(false);
    expect(provablyDead(holder, { ...me, pidNamespace: null }, probe({}))).toBe(false);
    expect(provablyDead(null, me, probe({}))).toBe(false);
    expect(provablyDead({ ...holder, pid: 0 }, me, probe({}))).toBe(false);
    expect(provablyDead(holder, me, { read: () => undefined, exists: () => false })).toBe(false); // unreadable
  });

  it('this process, on this Linux machine, knows its whole identity and is not dead', () => {
    const self = thisProcess();
    expect(self).toMatchObject({ pid: process.pid });
    expect(self.bootId).toMatch(/^[0-9a-f-]{36}$/);
    expect(self.pidNamespace).toMatch(/^\d+$/);
    expect(self.startTime).toMatch(/^\d+$/);
    expect(provablyDead(self)).toBe(false);
    expect(provablyDead({ ...self, startTime: String(Number(self.startTime) + 1) })).toBe(true); // our pid, reused
  });
});
