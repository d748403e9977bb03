/**
 * Hostile and paginated tool lists, from a low-level SDK `Server` that answers `tools/list` with
 * anything a test gives it: every page is read, a pagination that never ends is refused, and a
 * tool that cannot be used is a typed error (or left out, when asked), never a crash, never a
 * tool that skips approval.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Agent } from '../../src/index.js';
import {
  MAX_DESCRIPTION_LENGTH,
  MAX_PAGES,
  type McpToolProblem,
  McpToolsError,
  mcpTools,
} from '../../src/mcp/index.js';
import { scriptedPolicy } from '../../src/testing/index.js';
import { listed, type RawTool, rawServer } from './servers.js';
import { type Connected, inMemory, outcomes } from './support.js';

let connected: Connected | undefined;
afterEach(async () => {
  await connected?.close();
  connected = undefined;
});

async function clientOf(pages: RawTool[][], cursorOf?: (page: number) => unknown) {
  connected = await inMemory(rawServer(pages, cursorOf ? { cursorOf } : {}));
  return connected.client;
}

/** A client of a server listing `tools` whose calls answer `answer(name)`. */
async function answering(tools: RawTool[], answer: (name: string) => unknown) {
  connected = await inMemory(rawServer([tools], { answer }));
  return connected.client;
}

/** What mcpTools throws (failing the test when it does not throw). */
async function thrown(promise: Promise<unknown>): Promise<McpToolsError> {
  const error = await promise.then(
    () => new Error('mcpTools did not throw'),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpToolsError);
  return error as McpToolsError;
}

describe('pagination', () => {
  it('reads every page of tools/list, following nextCursor', async () => {
    const client = await clientOf([[listed('a'), listed('b')], [listed('c')], [listed('d')]]);
    expect((await mcpTools(client)).map((t) => t.name)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('refuses a cursor given twice (a loop), and a list of more than MAX_PAGES pages', async () => {
    const loop = await clientOf([[listed('a')], [listed('b')]], () => '1');
    expect((await thrown(mcpTools(loop))).message).toMatch(/gave the cursor "1" again/);
    await connected?.close();
    const endless = await clientOf([[listed('a')]], (page) => `page-${page + 1}`);
    expect((await thrown(mcpTools(endless))).message).toMatch(`more than ${MAX_PAGES} pages`);
  });
});

describe('hostile tool lists', () => {
  it('names that are not valid tool names, and two tools of one name, are refused, all named', async () => {
    const client = await clientOf([
      [
        listed('ok'),
        listed('has space'),
        listed('dotted.name'),
        listed('x'.repeat(65)),
        listed(''),
        listed('twice'),
        listed('twice', { annotations: { readOnlyHint: true } }),
      ],
    ]);
    const error = await thrown(mcpTools(client, { trust: true }));
    expect(error.problems.map((p) => p.name)).toEqual(['has space', 'dotted.name', 'x'.repeat(65), '', 'twice']);
    expect(error.problems.at(-1)?.reason).toBe('2 tools are named "twice"');
    expect(error.message).toMatch(/^mcpTools: the server lists tools that cannot be used: "has space": its name/);
  });

  it('with onInvalidTool, the invalid tools are reported and left out; the others are made', async () => {
    const client = await clientOf([[listed('ok'), listed('bad name'), listed('twice'), listed('twice')]]);
    const problems: McpToolProblem[] = [];
    const tools = await mcpTools(client, { onInvalidTool: (p) => problems.push(p) });
    expect(tools.map((t) => t.name)).toEqual(['ok']);
    expect(problems.map((p) => p.name)).toEqual(['bad name', 'twice']);
  });

  it('a schema the SDK refuses (not an object schema) fails the listing with a typed error', async () => {
    const client = await clientOf([[listed('ok'), { name: 'scalar', inputSchema: { type: 'string' } }]]);
    expect((await thrown(mcpTools(client))).message).toMatch(/^mcpTools: tools\/list failed: /);
  });

  it('a schema too large is refused; a huge description is cut', async () => {
    const huge = { type: 'object', properties: { a: { description: 'x'.repeat(200_000) } } };
    const client = await clientOf([
      [listed('big', { inputSchema: huge }), listed('talky', { description: 'y'.repeat(1_000_000) })],
    ]);
    const problems: McpToolProblem[] = [];
    const tools = await mcpTools(client, { onInvalidTool: (p) => problems.push(p) });
    expect(problems).toEqual([{ name: 'big', reason: expect.stringMatching(/inputSchema is \d+ characters of JSON/) }]);
    expect(tools[0]?.description).toHaveLength(MAX_DESCRIPTION_LENGTH + 1);
  });

  it('an untrusted server saying readOnlyHint (or anything else) does not skip approval', async () => {
    const annotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
    const client = await clientOf([[listed('peek', { annotations })]]);
    const [tool] = await mcpTools(client);
    expect(tool).toMatchObject({ sideEffect: true, needsApproval: true, idempotent: false });
  });

  it('a trusted server gets the gate only from readOnlyHint: true itself', async () => {
    const client = await clientOf([
      [
        listed('destructive-false', { annotations: { destructiveHint: false } }),
        listed('read-only-false', { annotations: { readOnlyHint: false, idempotentHint: true } }),
      ],
    ]);
    const tools = await mcpTools(client, { trust: true });
    expect(tools.map((t) => [t.name, t.sideEffect, t.needsApproval, t.idempotent])).toEqual([
      ['destructive-false', true, true, false],
      ['read-only-false', true, true, true],
    ]);
  });
});

describe('hostile schemas and results', () => {
  it('a schema that is not JSON, and one the validator refuses, are invalid tools', async () => {
    const notJson = { type: 'object', properties: {}, default: () => 1 };
    const client = await clientOf([[listed('fn', { inputSchema: notJson }), listed('ok')]]);
    const problems: McpToolProblem[] = [];
    const refusing = {
      getValidator: () => {
        throw new Error('unknown keyword');
      },
    };
    await mcpTools(client, { onInvalidTool: (p) => problems.push(p) });
    expect(problems).toEqual([{ name: 'fn', reason: expect.stringMatching(/^its inputSchema is not JSON/) }]);
    const refused = await thrown(mcpTools(client, { validator: refusing }));
    expect(refused.problems.map((p) => p.reason)).toEqual([
      expect.stringMatching(/^its inputSchema is not JSON/),
      'the validator refused its inputSchema (unknown keyword)',
    ]);
  });

  it('results that are not JSON, or not results at all, are error observations; the run goes on', async () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const answers: Record<string, unknown> = {
      dated: { content: [], structuredContent: { when: new Date(0) } },
      cyclic: { content: [], structuredContent: cyclic },
      nothing: 42,
      surrogate: { content: [{ type: 'text', text: 'half \ud800 a pair' }] },
    };
    const client = await answering(
      Object.keys(answers).map((name) => listed(name)),
      (name) => answers[name],
    );
    const policy = scriptedPolicy([...Object.keys(answers).map((tool) => ({ tool })), { final: 'survived' }]);
    const agent = new Agent({ tools: await mcpTools(client), policy });
    let status = await agent.start('go');
    while (status === 'awaiting_approval') status = await agent.decide(true, 'ok');
    expect(status).toBe('done');
    expect(agent.state.answer).toBe('survived');
    expect(outcomes(agent.state.history)).toEqual([
      { error: expect.stringMatching(/^TypeError: tool result is not JSON: .*Date/) },
      { error: expect.stringMatching(/^TypeError: tool result is not JSON: .*cycl/) },
      { error: expect.stringMatching(/^McpError: /) },
      { result: 'half \ufffd a pair' },
    ]);
  });
});
