import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { Agent, CHECKPOINT_FORMAT, CHECKPOINT_VERSION, CheckpointError, UserError } from '../src/index.js';
import { recorder, sequence } from './support/helpers.js';

async function pausedBlob() {
  const t = recorder('send', { sideEffect: true });
  const agent = new Agent({
    runId: 'r',
    policy: sequence({ tool: 'look' }, { tool: 'send', args: { to: 'x' } }),
    tools: [recorder('look').tool, t.tool],
  });
  await agent.start('unique-goal-text');
  return { blob: agent.checkpoint(), t };
}

function edit(blob: string, change: (c: any) => void): string {
  const c = JSON.parse(blob);
  change(c);
  return JSON.stringify(c);
}

describe('checkpoint format', () => {
  it('is canonical JSON with a format name and version, and round-trips exactly', async () => {
    const { blob } = await pausedBlob();
    const c = JSON.parse(blob);
    expect(c.format).toBe(CHECKPOINT_FORMAT);
    expect(c.version).toBe(CHECKPOINT_VERSION);
    expect(Object.keys(c)).toEqual(['format', 'snapshot', 'version']);
    const resumed = Agent.resume(blob, { policy: sequence(), tools: [] });
    expect(resumed.checkpoint()).toBe(blob);
    // A non-canonical copy (re-ordered, indented) reads the same and writes canonically.
    const pretty = JSON.stringify({ version: c.version, snapshot: c.snapshot, format: c.format }, null, 2);
    expect(Agent.resume(pretty, { policy: sequence(), tools: [] }).checkpoint()).toBe(blob);
  });

  it('stores the history once, not again in the policy actor input', async () => {
    const held = new Promise<never>(() => {});
    const agent = new Agent({ policy: () => held, tools: [] });
    void agent.start('unique-goal-text');
    const blob = agent.checkpoint();
    expect(JSON.parse(blob).snapshot.children.policy.snapshot.input).toEqual({ runId: agent.runId, step: 1 });
    expect(blob.split('unique-goal-text')).toHaveLength(2);
    await agent.cancel();
  });

  it('a valid blob resumes and loads in a new process', async () => {
    const { blob } = await pausedBlob();
    const script = `import { Agent } from './src/index.ts'; const b = process.argv[1];
      const a = Agent.resume(b, { policy: () => ({ final: 1 }), tools: [] });
      process.stdout.write(JSON.stringify({ same: a.checkpoint() === b, status: a.status }));`;
    const { stdout } = await promisify(execFile)(process.execPath, [
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      script,
      blob,
    ]);
    expect(JSON.parse(stdout)).toEqual({ same: true, status: 'awaiting_approval' });
  });
});

describe('a bad checkpoint gets a CheckpointError, never a tool call', () => {
  const cases: [string, (blob: string) => unknown, RegExp][] = [
    ['not a string', () => 42, /expected a string/],
    ['not JSON', () => '{"format":', /not JSON/],
    ['empty', () => '', /not JSON/],
    ['an array', () => '[]', /expected an object/],
    ['wrong format', (b) => edit(b, (c) => (c.format = 'langgraph')), /format is "langgraph"/],
    ['wrong version', (b) => edit(b, (c) => (c.version = 99)), /unsupported version 99/],
    ['missing version', (b) => edit(b, (c) => delete c.version), /with format, version and snapshot/],
    ['unknown state', (b) => edit(b, (c) => (c.snapshot.value = 'sleeping')), /snapshot.value/],
    ['unknown running substate', (b) => edit(b, (c) => (c.snapshot.value = { running: 'dreaming' })), /snapshot.value/],
    ['a transient state', (b) => edit(b, (c) => (c.snapshot.value = { running: 'checking' })), /snapshot.value/],
    ['steps negative', (b) => edit(b, (c) => (c.snapshot.context.steps = -1)), /snapshot.context.steps/],
    ['steps a string', (b) => edit(b, (c) => (c.snapshot.context.steps = '2')), /snapshot.context.steps/],
    [
      'history entry of a wrong shape',
      (b) => edit(b, (c) => c.snapshot.context.history.push({ role: 'system' })),
      /snapshot.context.history/,
    ],
    ['unknown context key', (b) => edit(b, (c) => (c.snapshot.context.extra = 1)), /snapshot.context/],
    ['no context', (b) => edit(b, (c) => delete c.snapshot.context), /snapshot.context/],
    [
      'pending removed while awaiting',
      (b) => edit(b, (c) => (c.snapshot.context.pending = null)),
      /pending must be set/,
    ],
    [
      'pending key of another run',
      (b) => edit(b, (c) => (c.snapshot.context.pending.key = 'other:2')),
      /does not belong/,
    ],
    [
      'pending step in the future',
      (b) =>
        edit(b, (c) => {
          c.snapshot.context.pending.step = 9;
          c.snapshot.context.pending.key = 'r:9';
        }),
      /does not belong/,
    ],
    [
      'executing without its tool actor',
      (b) =>
        edit(b, (c) => {
          c.snapshot.value = { running: 'executing' };
          c.snapshot.context.inflight = { ...c.snapshot.context.pending, approval: null };
          delete c.snapshot.context.inflight.requestedAt;
          delete c.snapshot.context.inflight.expiresAt;
          c.snapshot.context.pending = null;
        }),
      /snapshot.children/,
    ],
    [
      'a renamed invoke',
      (b) =>
        edit(b, (c) => {
          c.snapshot.value = { running: 'deciding' };
          c.snapshot.context.pending = null;
          c.snapshot.children = {
            policy: { snapshot: { status: 'active', input: { runId: 'r', step: 3 } }, src: 'llm', syncSnapshot: false },
          };
        }),
      /snapshot.children/,
    ],
    ['done status on an active state', (b) => edit(b, (c) => (c.snapshot.status = 'done')), /status done does not fit/],
    ['a lone surrogate', (b) => b.replace('unique-goal-text', '\\ud800'), /canonical JSON/],
    ['a huge number', (b) => b.replace('"steps":2', '"steps":1e400'), /snapshot.context.steps/],
  ];
  for (const [name, make, message] of cases) {
    it(name, async () => {
      const { blob, t } = await pausedBlob();
      let error: unknown;
      try {
        const agent = Agent.resume(make(blob) as string, { policy: sequence({ final: 1 }), tools: [t.tool] });
        await agent.decide(true);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(CheckpointError);
      expect(error).toBeInstanceOf(UserError);
      expect((error as Error).message).toMatch(message);
      expect(t.calls).toEqual([]);
    });
  }

  it('the error says where the problem is', async () => {
    const { blob } = await pausedBlob();
    const error = (() => {
      try {
        Agent.resume(
          edit(blob, (c) => (c.snapshot.context.usage.inputTokens = -5)),
          { policy: sequence(), tools: [] },
        );
      } catch (e) {
        return e as CheckpointError;
      }
    })();
    expect(error?.path).toBe('snapshot.context.usage.inputTokens');
  });
});

describe('checkpoints of runs that never started', () => {
  it('an idle run and one cancelled before starting round-trip', async () => {
    const idle = new Agent({ runId: 'i', policy: sequence(), tools: [] });
    expect(Agent.resume(idle.checkpoint(), { policy: sequence(), tools: [] }).status).toBe('idle');
    await idle.cancel('never mind');
    const blob = idle.checkpoint();
    const back = Agent.resume(blob, { policy: sequence(), tools: [] });
    expect(back.status).toBe('cancelled');
    expect(back.checkpoint()).toBe(blob);
  });
});
