/**
 * `tollgate worker <modules…>`: works the runs of these agent modules from the store until
 * SIGINT or SIGTERM, then stops gracefully (the runs in hand settle; a second signal releases
 * them at once).
 */
import { resolve } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import type { AgentDefinition } from '../../define.js';
import { DEFAULT_LEASE_MS } from '../../options.js';
import { Worker, type WorkerEvent } from '../../worker/worker.js';
import { loadAgentModule } from '../agent-module.js';
import { CliUsageError } from '../exit-codes.js';
import { refuseMissing } from '../open-store.js';
import { errOut, out } from '../output.js';
import { AgentRegistry } from '../registry.js';
import { type Act, type Common, jsonOption, storeOption, withStore } from './shared.js';

interface WorkerFlags extends Common {
  concurrency: number;
  pollMs: number;
  leaseMs: number;
  create?: boolean;
}

const positive = (max: number) => (value: string) => {
  const n = Number(value);
  if (value.trim() === '' || !Number.isSafeInteger(n) || n < 1 || n > max) {
    throw new InvalidArgumentError(`expected a whole number from 1 to ${max}`);
  }
  return n;
};

/** `tollgate worker`. */
export function workerCommand(act: Act): Command {
  return new Command('worker')
    .description('work runs of these agent modules from the store until SIGINT/SIGTERM')
    .argument('<modules...>', 'files whose default export is defineAgent({...})')
    .option('--concurrency <n>', 'runs worked at once', positive(1_000), 4)
    .option('--poll-ms <ms>', 'how often to look for work when the store cannot notify', positive(2 ** 31 - 1), 1_000)
    .option(
      '--lease-ms <ms>',
      "how long a run stays this worker's without a renewal (renewed every third of it); a dead worker's runs wait this long for another",
      positive(2 ** 31 - 1),
      DEFAULT_LEASE_MS,
    )
    .option('--create', 'create the SQLite store if it does not exist (without it, a missing store is refused)')
    .addOption(storeOption())
    .addOption(jsonOption())
    .addHelpText(
      'after',
      `
Example:
  $ tollgate worker ./agents/support.js ./agents/billing.js --concurrency 8 --lease-ms 10000 --store postgres://…`,
    )
    .action(act(work));
}

function line(event: WorkerEvent): string | null {
  switch (event.type) {
    case 'claimed':
      return `claimed   ${event.runId} (${event.agent}, ${event.status})`;
    case 'settled':
      return `settled   ${event.runId} → ${event.status}`;
    case 'error':
      return `error     ${event.runId ?? '(claim)'}: ${event.error instanceof Error ? event.error.message : String(event.error)}`;
    case 'released':
      return `released  ${event.runId}`;
    default:
      return null;
  }
}

async function work(modules: string[], o: WorkerFlags): Promise<number> {
  const definitions: AgentDefinition[] = [];
  const paths = new Map<string, string>();
  for (const module of modules) {
    const definition = await loadAgentModule(module);
    if (paths.has(definition.name)) {
      throw new CliUsageError(`two agent modules define an agent named ${JSON.stringify(definition.name)}`);
    }
    definitions.push(definition);
    paths.set(definition.name, resolve(module));
  }
  // A mistyped --store must not become a new, empty store that the worker watches forever.
  return withStore(o, { create: o.create === true }, async (opened) => {
    refuseMissing(opened);
    const worker = new Worker({
      store: opened.store,
      agents: definitions,
      concurrency: o.concurrency,
      pollMs: o.pollMs,
      leaseMs: o.leaseMs,
    });
    const registry = new AgentRegistry();
    worker.observe((event) => {
      // The registry knows each run's module, so `tollgate approve <runId>` needs no --agent.
      if (event.type === 'claimed') registry.set(opened.location, event.runId, paths.get(event.agent) ?? '');
      if (o.json) {
        const error = event.type === 'error' ? { error: String((event.error as Error)?.message ?? event.error) } : {};
        out(`${JSON.stringify({ ...event, ...error })}\n`);
        return;
      }
      const text = line(event);
      if (text) (event.type === 'error' ? errOut : out)(`${text}\n`);
    });
    const stopped = new Promise<void>((done) => {
      let signals = 0;
      const stop = () => {
        signals++;
        // The first signal lets the runs in hand settle; a second releases them at once.
        void worker.stop({ graceful: signals === 1 }).finally(done);
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });
    await worker.start();
    if (!o.json) {
      const agents = [...paths.keys()].join(', ');
      out(`worker ${worker.owner} · agents ${agents} · lease ${o.leaseMs} ms · store ${opened.location.display}\n`);
    }
    await stopped;
    return 0;
  });
}
