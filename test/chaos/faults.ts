/**
 * The faults the chaos suite makes, on worker processes, seeded:
 * - `kill`: SIGKILL at once, or right after the worker's next side effect took effect downstream,
 *   before its result is recorded (then the next owner's `verify`, or a human, must find it); a
 *   replacement is started at once;
 * - `pause`: SIGSTOP at once for 1.3–2.3 leases, then SIGCONT; or `freeze`: the worker stops
 *   itself right after its next save — often the write-ahead save of a side effect, the moment the
 *   fence check exists for (test/crash/zombie.int.test.ts) — and is woken as long after;
 * - Postgres, through the worker's own TCP proxy: `cut` resets every connection; `partition` drops
 *   every byte for 1.3–2.3 leases, then resets the connections.
 * Faults prefer a worker with a call in flight (a payment first), and never hurt the last whole one.
 */
import type { Fault, Observed } from './checks.js';
import type { Child } from './children.js';
import type { ChaosReport } from './report.js';

type Kind = 'kill' | 'killAfterEffect' | 'pause' | 'freeze' | 'cut' | 'partition';

const SQLITE: [Kind, number][] = [
  ['kill', 0.3],
  ['killAfterEffect', 0.2],
  ['pause', 0.25],
  ['freeze', 0.25],
];
const POSTGRES: [Kind, number][] = [
  ['kill', 0.2],
  ['killAfterEffect', 0.15],
  ['pause', 0.15],
  ['freeze', 0.15],
  ['cut', 0.15],
  ['partition', 0.2],
];

export interface FaultTerms {
  rng: () => number;
  leaseMs: number;
  observed: Observed;
  report: ChaosReport;
  /** The workers alive now. */
  workers: () => Child[];
  /** A worker was killed: forget it, start another. */
  replace: (dead: Child) => void;
}

export class Faults {
  readonly #t: FaultTerms;
  /** Faults under way, each with what ends it (run early when the faults stop). */
  readonly #open = new Map<ReturnType<typeof setTimeout>, () => void>();
  #ended = false;

  constructor(terms: FaultTerms) {
    this.#t = terms;
  }

  /** Makes one fault on one worker (waits at most ~2 s for the moment it wants). */
  async one(): Promise<void> {
    const { rng, report } = this.#t;
    const whole = this.#t.workers().filter((w) => !w.hurt && !w.ending);
    if (whole.length < 2) return;
    const paying = whole.filter((w) => (w.inCall.get('pay') ?? 0) > 0);
    const busy = whole.filter((w) => [...w.inCall.values()].some((n) => n > 0));
    const pool = paying.length > 0 && rng() < 0.5 ? paying : busy.length > 0 && rng() < 0.75 ? busy : whole;
    const target = pool[Math.floor(rng() * pool.length)] as Child;
    const kind = this.#kind(target.proxy !== null);
    if (kind === 'kill' || kind === 'killAfterEffect') {
      target.hurt = true;
      if (kind === 'killAfterEffect') {
        report.killsAfterEffect++;
        await target.next('called', 2_000);
      }
      this.#record(target, 'kill', Date.now(), Date.now());
      target.ending = true;
      target.process.kill('SIGKILL');
      report.kills++;
      void target.proxy?.close();
      this.#t.replace(target);
    } else if (kind === 'pause') {
      const f = this.#record(target, 'pause', Date.now(), null);
      target.hurt = true;
      target.process.kill('SIGSTOP');
      report.pauses++;
      this.#later(() => this.#wake(target, f));
    } else if (kind === 'freeze') {
      target.hurt = true;
      target.tell('freeze');
      // A worker with nothing to save soon is let off (a freeze that comes later is woken all the same).
      if ((await target.next('frozen', 2_000)) === null) {
        target.tell('thaw');
        target.hurt = false;
      }
    } else if (kind === 'cut') {
      this.#record(target, 'cut', Date.now(), Date.now());
      target.proxy?.cut();
      report.cuts++;
    } else {
      const f = this.#record(target, 'partition', Date.now(), null);
      target.hurt = true;
      target.proxy?.stall();
      report.partitions++;
      this.#later(() => {
        f.to = Date.now();
        target.proxy?.cut(); // the stalled connections have lost bytes: reset them
        target.proxy?.heal();
        target.hurt = false;
      });
    }
  }

  /** A worker stopped itself after a save (`at`, its clock): woken 1.3–2.3 leases later, or now once the faults ended. */
  frozen(child: Child, at: number): void {
    const f = this.#record(child, 'pause', at, null);
    child.hurt = true;
    this.#t.report.freezes++;
    if (this.#ended) this.#wake(child, f);
    else this.#later(() => this.#wake(child, f));
  }

  /** No more faults: every paused worker woken, every partition healed, no freeze left to come. */
  end(): void {
    this.#ended = true;
    for (const [timer, end] of this.#open) {
      clearTimeout(timer);
      end();
    }
    this.#open.clear();
    for (const w of this.#t.workers()) {
      w.tell('thaw');
      w.process.kill('SIGCONT');
      w.proxy?.heal();
      w.hurt = false;
    }
  }

  #kind(postgres: boolean): Kind {
    let roll = this.#t.rng();
    for (const [kind, weight] of postgres ? POSTGRES : SQLITE) {
      roll -= weight;
      if (roll < 0) return kind;
    }
    return 'kill';
  }

  #record(child: Child, kind: Fault['kind'], from: number, to: number | null): Fault {
    const f: Fault = { kind, from, to };
    const faults = this.#t.observed.faults;
    faults.set(child.pid, [...(faults.get(child.pid) ?? []), f]);
    return f;
  }

  /** `to` is taken before the SIGCONT: a call the worker starts after waking starts at or after it. */
  #wake(child: Child, f: Fault): void {
    f.to = Date.now();
    child.process.kill('SIGCONT');
    child.hurt = false;
  }

  /** Ends a fault longer than a lease: 1.3–2.3 of them. */
  #later(end: () => void): void {
    const timer = setTimeout(
      () => {
        this.#open.delete(timer);
        end();
      },
      this.#t.leaseMs * (1.3 + this.#t.rng()),
    );
    this.#open.set(timer, end);
  }
}
