/**
 * The holder's process as a store takes it with a claim (`ClaimOptions.process`): checked alike
 * by every store, so that what one keeps every other could keep, and `RunBusyError` shows the
 * same shape whatever the store.
 */
import { OptionsError } from '../errors.js';
import { checkKeys, showValue } from '../option-keys.js';
import type { ProcessIdentity } from '../process-identity.js';
import { unstorableText } from './arguments.js';

const PROCESS_KEYS = ['host', 'bootId', 'pidNamespace', 'pid', 'startTime'];
/** The longest text of a process identity a store keeps (host names are at most 255 bytes). */
const MAX_PROCESS_TEXT = 256;

/**
 * Throws `OptionsError` unless `value` is a `ProcessIdentity` every store can keep (or null,
 * or undefined: unknown). @returns it as a plain object, or null.
 */
export function checkProcess(call: string, value: unknown): ProcessIdentity | null {
  if (value === undefined || value === null) return null;
  const fail = (what: string, got: unknown): never => {
    throw new OptionsError(`${call}: process${what}, got ${showValue(got)}`);
  };
  if (typeof value !== 'object' || Array.isArray(value)) {
    return fail(' must be { host, bootId, pidNamespace, pid, startTime } or null', value);
  }
  checkKeys(call, value, PROCESS_KEYS, 'process field');
  const p = value as Partial<ProcessIdentity>;
  const text = (key: 'host' | 'bootId' | 'pidNamespace' | 'startTime', nullable: boolean) => {
    const v = p[key];
    if (v === null && nullable) return;
    if (typeof v !== 'string' || v === '' || v.length > MAX_PROCESS_TEXT || unstorableText(v) !== null) {
      fail(
        `.${key} must be a non-empty string of at most ${MAX_PROCESS_TEXT} characters${nullable ? ' or null' : ''}`,
        v,
      );
    }
  };
  text('host', false);
  text('bootId', true);
  text('pidNamespace', true);
  if (!Number.isSafeInteger(p.pid) || (p.pid as number) < 1) fail('.pid must be a whole number ≥ 1', p.pid);
  text('startTime', true);
  if (p.startTime !== null && !/^\d+$/.test(p.startTime as string))
    fail('.startTime must be decimal digits', p.startTime);
  const { host, bootId, pidNamespace, pid, startTime } = p as ProcessIdentity;
  return { host, bootId, pidNamespace, pid, startTime };
}
