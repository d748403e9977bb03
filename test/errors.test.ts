import { describe, expect, it } from 'vitest';
import {
  Agent,
  CheckpointError,
  NoPendingApprovalError,
  OptionsError,
  RunStateError,
  StaleApprovalError,
  SystemError,
  TollgateError,
  UserError,
} from '../src/index.js';
import { sequence } from './support/helpers.js';

describe('typed errors', () => {
  it('share one base class, set name, and split user mistakes from system faults', () => {
    const classes = [OptionsError, RunStateError, NoPendingApprovalError, StaleApprovalError, CheckpointError];
    for (const C of classes) expect(C.prototype).toBeInstanceOf(UserError);
    expect(new SystemError('x')).toBeInstanceOf(TollgateError);
    expect(new SystemError('x')).not.toBeInstanceOf(UserError);
    expect(new CheckpointError('bad', 'snapshot.value').name).toBe('CheckpointError');
    expect(new RunStateError('m', ['idle'], { runId: 'r', status: 'done' })).toMatchObject({
      name: 'RunStateError',
      runId: 'r',
      status: 'done',
      expected: ['idle'],
    });
  });

  it('start on a started run throws RunStateError with the run id and status', async () => {
    const agent = new Agent({ runId: 'r', policy: sequence({ final: 1 }), tools: [] });
    await agent.start('go');
    const error = await agent.start('again').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunStateError);
    expect(error).toMatchObject({ runId: 'r', status: 'done', expected: ['idle'] });
    expect((error as Error).message).toBe(
      'start: the run is done; expected idle; a run that answered goes on with send(message)',
    );
  });

  it('start while running throws; the run goes on undisturbed', async () => {
    let release!: () => void;
    const agent = new Agent({ policy: () => new Promise((r) => (release = () => r({ final: 'ok' }))), tools: [] });
    const first = agent.start('go');
    await expect(agent.start('go')).rejects.toBeInstanceOf(RunStateError);
    release();
    expect(await first).toBe('done');
  });

  it('run() before start throws; on an ended run it returns the status', async () => {
    const agent = new Agent({ policy: sequence({ final: 1 }), tools: [] });
    await expect(agent.run()).rejects.toBeInstanceOf(RunStateError);
    await agent.start('go');
    expect(await agent.run()).toBe('done');
  });

  it('cancel on a cancelled run throws RunStateError', async () => {
    const agent = new Agent({ policy: sequence({ final: 1 }), tools: [] });
    await agent.start('go');
    await agent.cancel();
    await expect(agent.cancel()).rejects.toBeInstanceOf(RunStateError);
  });

  it('decide with nothing pending throws NoPendingApprovalError', async () => {
    const agent = new Agent({ policy: sequence({ final: 1 }), tools: [] });
    await expect(agent.decide(true)).rejects.toBeInstanceOf(NoPendingApprovalError);
  });

  it('a goal that is not a string throws OptionsError', async () => {
    const agent = new Agent({ policy: sequence({ final: 1 }), tools: [] });
    await expect(agent.start(42 as never)).rejects.toBeInstanceOf(OptionsError);
    expect(agent.status).toBe('idle');
  });
});

describe('options are checked up front', () => {
  const policy = sequence({ final: 1 });
  const bad: [string, object, RegExp][] = [
    ['no policy', { tools: [] }, /^new Agent: policy must be a function, got undefined$/],
    ['tools not an array', { policy, tools: {} }, /tools/],
    [
      'a tool without fn',
      { policy, tools: [{ name: 't' }] },
      /^new Agent: tools\[0\]\.fn must be a function, got undefined$/,
    ],
    [
      'a tool with an empty name',
      { policy, tools: [{ name: '', fn: () => 1 }] },
      /^new Agent: tools\[0\]\.name must be a non-empty string \(without lone surrogates\), got ""$/,
    ],
    [
      'two tools with one name',
      {
        policy,
        tools: [
          { name: 't', fn: () => 1 },
          { name: 't', fn: () => 2 },
        ],
      },
      /two tools are named "t"/,
    ],
    ['a negative timeout', { policy, tools: [{ name: 't', fn: () => 1, timeoutMs: -1 }] }, /timeoutMs/],
    ['needsApproval a string', { policy, tools: [{ name: 't', fn: () => 1, needsApproval: 'yes' }] }, /needsApproval/],
    ['maxSteps negative', { policy, tools: [], maxSteps: -1 }, /maxSteps/],
    ['maxSteps fractional', { policy, tools: [], maxSteps: 2.5 }, /maxSteps/],
    ['maxTokens a string', { policy, tools: [], maxTokens: '100' }, /maxTokens/],
    ['approvalTtlMs zero', { policy, tools: [], approvalTtlMs: 0 }, /approvalTtlMs/],
    ['runId empty', { policy, tools: [], runId: '' }, /runId/],
    ['policyRetries huge', { policy, tools: [], policyRetries: 1000 }, /policyRetries/],
    ['clock without sleep', { policy, tools: [], clock: { now: () => 0 } }, /clock.sleep/],
  ];
  for (const [name, options, message] of bad) {
    it(name, () => {
      expect(() => new Agent(options as never)).toThrow(OptionsError);
      expect(() => new Agent(options as never)).toThrow(message);
    });
  }

  it('resume checks its options before reading the blob', () => {
    expect(() => Agent.resume('not json', { policy, tools: [], maxSteps: -2 })).toThrow(OptionsError);
  });

  it('runId defaults to a fresh unique id', () => {
    const a = new Agent({ policy, tools: [] });
    const b = new Agent({ policy, tools: [] });
    expect(a.runId).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.runId).not.toBe(b.runId);
    expect(a.state).toMatchObject({ runId: a.runId, status: 'idle', steps: 0, limits: { maxSteps: 8 } });
  });

  it('a class-based tool keeps its this', async () => {
    class Counter {
      name = 'count';
      n = 0;
      fn() {
        return ++this.n;
      }
    }
    const tool = new Counter();
    const agent = new Agent({ policy: sequence({ tool: 'count' }, { final: 1 }), tools: [tool] });
    await agent.start('go');
    expect(agent.state.history[2]).toEqual({ role: 'tool', tool: 'count', result: 1 });
  });
});
