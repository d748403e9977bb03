/**
 * Blobs the checkpoint tests break one rule at a time: a version-2 run at step 2 with three calls
 * (a pure `look` that ran, two `send`s), awaiting approval or with the sends in flight.
 */
import { expect } from 'vitest';
import { Agent, CheckpointError } from '../../src/index.js';
import { gate, recorder, sequence, until } from './helpers.js';

export const T = '2026-12-01T09:00:00.000Z';
export const look = recorder('look').tool;

/** Step 2 of run 'r': three calls; the pure `look` ran, `send` to x and to y wait. */
export const stepOfThree = {
  calls: [
    { tool: 'look', args: { q: 1 } },
    { tool: 'send', args: { to: 'x' } },
    { tool: 'send', args: { to: 'y' } },
  ],
};

/** A run awaiting approval at step 2 with three calls: [done, pending, pending]. */
export async function awaitingBlob(): Promise<string> {
  const agent = new Agent({
    runId: 'r',
    policy: sequence({ tool: 'look' }, stepOfThree),
    tools: [look, recorder('send', { sideEffect: true }).tool],
  });
  await agent.start('goal');
  return agent.checkpoint();
}

/** The same step with both sends approved: [done, running (x), queued (y)], the write-ahead record. */
export async function executingBlob(): Promise<string> {
  const held = gate();
  const send = { name: 'send', sideEffect: true, fn: () => held.promise };
  const agent = new Agent({ runId: 'r', policy: sequence({ tool: 'look' }, stepOfThree), tools: [look, send] });
  await agent.start('goal');
  const [x, y] = agent.state.pendingCalls;
  const deciding = agent.decide({ [x!.id]: { approve: true, note: 'ok' }, [y!.id]: { approve: true } }, { by: 'a' });
  await until(() => agent.state.inflight !== null);
  const blob = agent.checkpoint();
  await agent.cancel();
  held.resolve('ok');
  await deciding.catch(() => {});
  return blob;
}

export function edit(blob: string, change: (c: any) => void): string {
  const c = JSON.parse(blob);
  change(c);
  return JSON.stringify(c);
}

export function errorOf(blob: unknown): CheckpointError {
  try {
    Agent.resume(blob as string, { policy: sequence({ final: 1 }), tools: [] });
  } catch (error) {
    expect(error).toBeInstanceOf(CheckpointError);
    return error as CheckpointError;
  }
  throw new Error('the checkpoint was accepted');
}

export const accepted = (blob: string) => Agent.resume(blob, { policy: sequence({ final: 1 }), tools: [] });
