/**
 * Waiting for the store no longer than the caller wants: an operation raced against the caller's
 * signal (store claims, `Agent.load`, `submitRun`, `recordDecision`).
 */

/**
 * `work`'s result, or a rejection with `signal`'s reason as soon as it aborts, whichever comes
 * first (at once if it already has). What `work` gives after that goes to `late` (a lease to
 * release), and a late failure is ignored: the caller was told it stopped, as a crash would.
 */
export function untilAborted<T>(
  signal: AbortSignal | undefined,
  work: Promise<T>,
  late: (value: T) => void = () => {},
): Promise<T> {
  if (signal === undefined) return work;
  if (signal.aborted) {
    work.then(late, () => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    let stopped = false;
    const onAbort = () => {
      stopped = true;
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        if (stopped) late(value);
        else resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        if (!stopped) reject(error);
      },
    );
  });
}
