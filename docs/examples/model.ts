/**
 * The demo's model: a real one when an API key is in the environment (`OPENAI_API_KEY`, else
 * `ANTHROPIC_API_KEY`; `TOLLGATE_MODEL` names the model; `OPENAI_BASE_URL` or `ANTHROPIC_BASE_URL`
 * another server of the same API), otherwise none, and the demo stays
 * offline on its scripted policy. The SDK is loaded only when it is used.
 */
import type { Policy, Tool } from '../../src/index.js';

const instructions = [
  'You are the support desk of a small shop.',
  'For a customer request: look the order up, refund it if it arrived broken or wrong (its full amount, in dollars),',
  'email the customer about the outcome, then answer with a one-line summary.',
  'A human may deny a refund: then email the customer that a colleague will follow up.',
].join(' ');

/** The policy of the model the environment names, or null without an API key. */
export function modelPolicy(tools: readonly Tool[], env = process.env): Policy | null {
  const model = env.TOLLGATE_MODEL;
  let load: (() => Promise<Policy>) | null = null;
  if (env.OPENAI_API_KEY) {
    load = async () => {
      const [{ default: OpenAI }, { openaiPolicy }] = await Promise.all([
        import('openai'),
        import('../../src/models/openai.js'),
      ]);
      const client = new OpenAI({ apiKey: env.OPENAI_API_KEY, baseURL: env.OPENAI_BASE_URL });
      return openaiPolicy({ client, model: model ?? 'gpt-5-mini', tools, instructions });
    };
  } else if (env.ANTHROPIC_API_KEY) {
    load = async () => {
      const [{ default: Anthropic }, { anthropicPolicy }] = await Promise.all([
        import('@anthropic-ai/sdk'),
        import('../../src/models/anthropic.js'),
      ]);
      const client = new Anthropic({ apiKey: env.ANTHROPIC_API_KEY, baseURL: env.ANTHROPIC_BASE_URL });
      return anthropicPolicy({ client, model: model ?? 'claude-sonnet-4-5', tools, instructions });
    };
  }
  if (!load) return null;
  let policy: Promise<Policy> | undefined;
  return async (history, ctx) => {
    policy ??= load();
    return (await policy)(history, ctx);
  };
}
