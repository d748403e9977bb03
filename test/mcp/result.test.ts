/**
 * `resultOf`, on answers no honest server sends: what a `tools/call` answer becomes is always a
 * value or an `McpToolError`, whatever the answer is.
 */
import { describe, expect, it } from 'vitest';
import { McpToolError, resultOf } from '../../src/mcp/index.js';

const thrown = (answer: unknown): unknown => {
  try {
    resultOf(answer, 'lookup');
  } catch (error) {
    return error;
  }
  throw new Error('resultOf did not throw');
};

describe('resultOf', () => {
  it('an answer that is not an object is an McpToolError naming the tool', () => {
    for (const answer of [null, 42, 'text', [{ type: 'text', text: 'x' }]]) {
      const error = thrown(answer);
      expect(error).toBeInstanceOf(McpToolError);
      expect(error).toMatchObject({ tool: 'lookup', message: expect.stringMatching(/not an object/) });
    }
  });

  it('isError says the text, else the structured content, else that there was none; bounded', () => {
    expect(
      thrown({
        isError: true,
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      }),
    ).toMatchObject({
      message: 'a\nb',
    });
    expect(thrown({ isError: true, content: [], structuredContent: { code: 7 } })).toMatchObject({
      message: '{"code":7}',
    });
    expect(thrown({ isError: true })).toMatchObject({ message: 'the tool reported an error and gave no text' });
    const long = thrown({ isError: true, content: [{ type: 'text', text: 'x'.repeat(100_000) }] }) as Error;
    expect(long.message).toHaveLength(4_001);
    // Only `true` is an error: a truthy string is not.
    expect(resultOf({ isError: 'yes', content: [{ type: 'text', text: 'fine' }] }, 'lookup')).toBe('fine');
  });

  it('blocks that are not text blocks are kept as they are; content that is not a list is no content', () => {
    const odd = [{ type: 'text', text: 7 }, 'a string', null];
    expect(resultOf({ content: odd }, 'lookup')).toEqual({ text: '', content: odd });
    expect(resultOf({ content: 'not a list' }, 'lookup')).toBe('');
    expect(resultOf({ content: [], structuredContent: [1, 2] }, 'lookup')).toBe('');
  });

  it('a protocol 2024-10-07 answer gives its toolResult', () => {
    expect(resultOf({ toolResult: { rows: 3 } }, 'lookup')).toEqual({ rows: 3 });
  });
});
