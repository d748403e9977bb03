/** Small statistics and memory helpers for the benchmark. */

export interface Summary {
  median: number;
  min: number;
  max: number;
  n: number;
}

export function summarise(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median =
    sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
  return { median, min: sorted[0] as number, max: sorted.at(-1) as number, n: sorted.length };
}

/** A full collection, so that a sample does not pay for the garbage of the one before. */
export function collect(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc (npm run bench does)');
  gc();
  gc();
}

export function heapUsed(): number {
  return process.memoryUsage().heapUsed;
}

/** Samples heapUsed every few ms while `work` runs; returns the peak over the baseline. */
export async function peakHeap<T>(
  work: () => Promise<T>,
): Promise<{ result: T; peakBytes: number; afterBytes: number }> {
  collect();
  const base = heapUsed();
  let peak = base;
  const timer = setInterval(() => {
    peak = Math.max(peak, heapUsed());
  }, 2);
  try {
    const result = await work();
    const after = heapUsed();
    peak = Math.max(peak, after);
    return { result, peakBytes: peak - base, afterBytes: after - base };
  } finally {
    clearInterval(timer);
  }
}

export const fmt = {
  us: (v: number) => (v >= 1000 ? `${(v / 1000).toFixed(2)} ms` : `${v.toFixed(v < 10 ? 1 : 0)} µs`),
  ms: (v: number) => (v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${v.toFixed(v < 10 ? 2 : 1)} ms`),
  bytes: (v: number) =>
    v >= 1024 * 1024
      ? `${(v / 1024 / 1024).toFixed(2)} MB`
      : v >= 1024
        ? `${(v / 1024).toFixed(2)} KB`
        : `${Math.round(v)} B`,
  ratio: (v: number) => (v >= 10 ? `${v.toFixed(0)}×` : `${v.toFixed(2)}×`),
};
