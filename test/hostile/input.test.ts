/**
 * Issue 10, "Input from the model and from tools": values a prompt-injected policy or a broken
 * tool can produce, each reproduced as it was found, each ending as an observation (or a typed
 * error) with the gate shut and a checkpoint that loads.
 */
import { describe, expect, it } from 'vitest';
import { Agent, CheckpointError, OptionsError, type Tool } from '../../src/index.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { recorder, sequence } from '../support/helpers.js';

/** `depth` nested arrays around `leaf`. */
function nested(depth: number, leaf: unknown = 1): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

const resumes = (agent: Agent) => {
  const blob = agent.checkpoint();
  expect(() => JSON.parse(blob)).not.toThrow();
  const again = Agent.resume(blob, { policy: sequence({ final: 'x' }), tools: [] });
  expect(again.checkpoint()).toBe(blob);
  return again;
};

describe('__proto__ from the model cannot open the gate', () => {
  const action = () => JSON.parse('{"tool":"refund","args":{"__proto__":{"dryRun":true},"cents":1000000}}');

  it('a predicate reading args.dryRun sees no inherited value: the refund waits for a human', async () => {
    const refund = recorder('refund', { sideEffect: true, needsApproval: (a: { dryRun?: boolean }) => !a.dryRun });
    const agent = new Agent({ runId: 'r', policy: sequence(action(), { final: 'ok' }), tools: [refund.tool] });
    expect(await agent.start('refund')).toBe('awaiting_approval');
    expect(refund.calls).toEqual([]);
    const pending = agent.state.pending;
    expect(Object.keys(pending?.args ?? {})).toEqual(['__proto__', 'cents']);
    expect(Object.getPrototypeOf(pending?.args)).toBe(Object.prototype);
    // The checkpoint keeps the key as data, and a resumed run asks about the same arguments.
    const again = Agent.resume(agent.checkpoint(), { policy: sequence({ final: 'ok' }), tools: [refund.tool] });
    expect(again.state.pending).toEqual(pending);
    expect(await again.decide(true, 'checked')).toBe('done');
    const [call] = refund.calls;
    expect(Object.keys(call?.args)).toEqual(['__proto__', 'cents']);
    expect(call?.args.dryRun).toBeUndefined();
    expect(Object.getOwnPropertyDescriptor(call?.args, '__proto__')?.value).toEqual({ dryRun: true });
  });

  it('the predicate and the tool see the very same value, frozen for the predicate', async () => {
    const seen: unknown[] = [];
    const tool: Tool = {
      name: 't',
      needsApproval: (args) => {
        seen.push(args);
        expect(Object.isFrozen(args)).toBe(true);
        return false;
      },
      fn: (args) => {
        seen.push(args);
        return 'ok';
      },
    };
    const args = JSON.parse('{"constructor":{"x":1},"prototype":2,"__proto__":[3]}');
    const agent = new Agent({ policy: sequence({ tool: 't', args }, { final: 1 }), tools: [tool] });
    expect(await agent.start('go')).toBe('done');
    expect(seen[0]).toStrictEqual(seen[1]);
    expect(Object.keys(seen[1] as object)).toEqual(['constructor', 'prototype', '__proto__']);
  });

  it('tool results keep __proto__, constructor and prototype as ordinary keys', async () => {
    const result = JSON.parse('{"__proto__":{"admin":true},"constructor":"c","prototype":null}');
    const agent = new Agent({
      policy: sequence({ tool: 't' }, { final: 1 }),
      tools: [{ name: 't', fn: () => result }],
    });
    await agent.start('go');
    const entry = agent.state.history[2] as { result: Record<string, unknown> };
    expect(Object.keys(entry.result)).toEqual(['__proto__', 'constructor', 'prototype']);
    expect(entry.result.admin).toBeUndefined();
    resumes(agent);
  });
});

describe('sparse arrays', () => {
  it('holes in a result become null, as JSON.stringify writes them, and the run loads', async () => {
    const agent = new Agent({
      policy: sequence({ tool: 't' }, { final: 1 }),
      // biome-ignore lint/suspicious/noSparseArray: the hole is what is tested
      tools: [{ name: 't', fn: () => ({ list: new Array(3), mixed: [1, , 3] }) }],
    });
    await agent.start('go');
    expect(agent.state.history[2]).toEqual({
      role: 'tool',
      tool: 't',
      result: { list: [null, null, null], mixed: [1, null, 3] },
    });
    resumes(agent);
  });

  it('holes in arguments become null, and an awaiting run stays decidable after a reload', async () => {
    const store = new MemoryStore();
    const pay = recorder('pay', { sideEffect: true });
    const policy = sequence({ tool: 'pay', args: { items: new Array(2) } }, { final: 'ok' });
    const agent = new Agent({ runId: 'r', policy, tools: [pay.tool], store });
    expect(await agent.start('go')).toBe('awaiting_approval');
    const loaded = await Agent.load(store, 'r', { policy, tools: [pay.tool] });
    expect(loaded.state.pending?.args).toEqual({ items: [null, null] });
    expect(await loaded.decide(true)).toBe('done');
    expect(pay.calls).toEqual([{ args: { items: [null, null] }, key: 'r:1' }]);
  });

  it('an array too long to copy is refused, not walked', async () => {
    const agent = new Agent({
      policy: sequence({ tool: 't' }, { final: 1 }),
      tools: [{ name: 't', fn: () => new Array(2 ** 32 - 1) }],
    });
    await agent.start('go');
    expect(agent.state.history[2]).toEqual({
      role: 'tool',
      tool: 't',
      error: 'TypeError: tool result is not JSON: result holds more than 1000000 values',
    });
  });
});

describe('deep nesting', () => {
  it('a result nested deeper than 512 is an error observation; the checkpoint still encodes', async () => {
    const agent = new Agent({
      policy: sequence({ tool: 't' }, { final: 1 }),
      tools: [{ name: 't', fn: () => nested(5_000) }],
    });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.history[2]).toMatchObject({ error: expect.stringMatching(/nests deeper than 512 levels$/) });
    resumes(agent);
  });

  it('a result exactly 512 deep is kept', async () => {
    const agent = new Agent({
      policy: sequence({ tool: 't' }, { final: 1 }),
      tools: [{ name: 't', fn: () => nested(512) }],
    });
    await agent.start('go');
    expect(agent.state.history[2]).toEqual({ role: 'tool', tool: 't', result: nested(512) });
    resumes(agent);
  });

  it('deep arguments and finals are malformed actions; with a store, start() settles and the run is saved', async () => {
    const store = new MemoryStore();
    const policy = sequence({ tool: 't', args: { a: nested(3_000) } }, { final: nested(3_000) }, { final: 'ok' });
    const agent = new Agent({ runId: 'r', policy, tools: [{ name: 't', fn: () => 1 }], store });
    expect(await agent.start('go')).toBe('done');
    const errors = agent.state.history.filter((e) => 'error' in e).map((e) => (e as { error: string }).error);
    expect(errors).toEqual([
      'malformed action: args.a[0][0][0][0]…[0][0][0] nests deeper than 512 levels',
      'malformed action: final[0][0][0][0][0]…[0][0][0] nests deeper than 512 levels',
    ]);
    expect((await store.load('r'))?.status).toBe('done');
  });

  it('Agent.resume of a blob nested thousands deep is a CheckpointError, not a RangeError', async () => {
    const agent = new Agent({ policy: sequence({ final: 1 }), tools: [] });
    await agent.start('go');
    const blob = agent.checkpoint().replace('"answer":1', `"answer":${'['.repeat(20_000)}${']'.repeat(20_000)}`);
    expect(() => Agent.resume(blob, { policy: sequence(), tools: [] })).toThrow(CheckpointError);
    expect(() => Agent.resume(blob, { policy: sequence(), tools: [] })).toThrow(/nests 20003 levels deep/);
  });
});

describe('lone surrogates', () => {
  it('are refused up front in a run id, a goal, a note, an approver and a reason', async () => {
    expect(() => new Agent({ runId: 'r\ud800', policy: sequence(), tools: [] })).toThrow(OptionsError);
    expect(() => new Agent({ runId: 'r\u0000x', policy: sequence(), tools: [] })).toThrow(
      /runId must be a string of 1 to 200 characters, without control characters or lone surrogates/,
    );
    const agent = new Agent({
      runId: 'r',
      policy: sequence({ tool: 'p' }),
      tools: [recorder('p', { sideEffect: true }).tool],
    });
    await expect(agent.start('go \udc00')).rejects.toThrow(/^start: goal must be a string \(without lone surrogates\)/);
    expect(agent.status).toBe('idle');
    await agent.start('go');
    await expect(agent.decide(true, 'ok', { by: '\ud800' })).rejects.toThrow(OptionsError);
    await expect(agent.cancel('\ud800')).rejects.toThrow(OptionsError);
    expect(agent.status).toBe('awaiting_approval');
    resumes(agent);
  });

  it('in a tool name from the model: a malformed action, named well-formed', async () => {
    const agent = new Agent({ policy: sequence({ tool: 'pay\ud800' }, { final: 1 }), tools: [] });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.history[1]).toEqual({
      role: 'tool',
      tool: 'pay\ufffd',
      error: 'malformed action: tool is a string with a lone surrogate',
    });
    resumes(agent);
  });

  it('in an error a tool throws: repaired, so the checkpoint can be written', async () => {
    const agent = new Agent({
      policy: sequence({ tool: 't' }, { final: 1 }),
      tools: [
        {
          name: 't',
          fn: () => {
            throw new Error('bad \ud800 byte');
          },
        },
      ],
    });
    await agent.start('go');
    expect(agent.state.history[2]).toEqual({ role: 'tool', tool: 't', error: 'Error: bad \ufffd byte' });
    resumes(agent);
  });
});

describe('a policy that throws a hostile object', () => {
  const revoked = () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    return proxy;
  };
  const throwing: [string, () => unknown, string][] = [
    [
      'a throwing toString',
      () => ({
        toString() {
          throw new Error('no');
        },
      }),
      'Error: <an object>',
    ],
    [
      'a throwing message getter',
      () => ({
        name: 'Evil',
        get message() {
          throw new Error('no');
        },
      }),
      'Error: <unreadable thrown value>',
    ],
    [
      'a Proxy whose every trap throws',
      () =>
        new Proxy(
          {},
          {
            get: () => {
              throw new Error('trap');
            },
            has: () => {
              throw new Error('trap');
            },
            getPrototypeOf: () => {
              throw new Error('trap');
            },
          },
        ),
      'Error: <unreadable thrown value>',
    ],
    ['a revoked Proxy', revoked, 'Error: <unreadable thrown value>'],
  ];
  for (const [name, make, recorded] of throwing) {
    it(`${name}: the run ends failed with the error recorded, and resumes`, async () => {
      const agent = new Agent({
        policyRetries: 0,
        policy: () => {
          throw make();
        },
        tools: [],
      });
      expect(await agent.start('go')).toBe('failed');
      expect(agent.state.error).toBe(recorded);
      resumes(agent);
    });

    it(`${name} from a tool: an error observation`, async () => {
      const agent = new Agent({
        policy: sequence({ tool: 't' }, { final: 1 }),
        tools: [
          {
            name: 't',
            fn: () => {
              throw make();
            },
          },
        ],
      });
      expect(await agent.start('go')).toBe('done');
      expect(agent.state.history[2]).toEqual({ role: 'tool', tool: 't', error: recorded });
    });
  }

  it('a thrown array of 2^32−1 holes is named, not stringified (that would never end)', async () => {
    const agent = new Agent({
      policyRetries: 0,
      policy: () => {
        throw new Array(2 ** 32 - 1);
      },
      tools: [],
    });
    expect(await agent.start('go')).toBe('failed');
    expect(agent.state.error).toBe('Error: <an array>');
  });

  it('an error message longer than 8,000 characters is kept shortened', async () => {
    const agent = new Agent({
      policy: sequence({ tool: 't' }, { final: 1 }),
      tools: [
        {
          name: 't',
          fn: () => {
            throw new Error('x'.repeat(50_000));
          },
        },
      ],
    });
    await agent.start('go');
    const { error } = agent.state.history[2] as { error: string };
    expect(error).toBe(`Error: ${'x'.repeat(7_993)}… (42007 more characters)`);
  });

  it('a revoked Proxy returned as the action is a malformed-action observation', async () => {
    const agent = new Agent({ policy: sequence(revoked(), { final: 1 }), tools: [] });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.history[1]).toEqual({
      role: 'tool',
      tool: '',
      error: expect.stringMatching(/^malformed action: the action could not be read: TypeError: .*revoked/),
    });
  });

  it('an action whose getters throw is a malformed-action observation', async () => {
    const action = {
      get tool(): string {
        throw new Error('gotcha');
      },
    };
    const agent = new Agent({ policy: sequence(action, { final: 1 }), tools: [] });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.history[1]).toEqual({
      role: 'tool',
      tool: '',
      error: 'malformed action: the action could not be read: Error: gotcha',
    });
  });

  it('a getter that answers differently on each read cannot pass one value to the check and another to the tool', async () => {
    let reads = 0;
    const args = {
      get cents() {
        reads++;
        return reads === 1 ? 5 : 500_000;
      },
    };
    const pay = recorder('pay', { sideEffect: true, needsApproval: (a: { cents: number }) => a.cents > 100 });
    const agent = new Agent({ policy: sequence({ tool: 'pay', args }, { final: 1 }), tools: [pay.tool] });
    expect(await agent.start('go')).toBe('done');
    expect(reads).toBe(1);
    expect(pay.calls).toEqual([{ args: { cents: 5 }, key: expect.any(String) }]);
  });
});
