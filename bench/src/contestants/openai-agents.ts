/**
 * OpenAI Agents SDK contestant (`@openai/agents-core`): an `Agent` with one zod-typed function
 * tool, run by a `Runner` (non-streaming) against a scripted `Model` that plays `nextAction`, so
 * no network is used. Tracing is disabled globally and on the runner.
 *
 * `bytes` is the sum of the UTF-8 sizes of `RunState#toString()` taken once per turn: at the
 * start of every turn after the first (the previous turn's tool output is then in the state) and
 * once after the run, i.e. steps + 1 snapshots. The SDK has no per-turn persistence hook that
 * sees the RunState: the lifecycle events (`agent_start`, `agent_tool_end`, `agent_end`) carry
 * the RunContext only, and `callModelInputFilter` re-copies and re-matches the whole input every
 * turn, which would inflate the timing. So the run is started from a `RunState` we construct
 * (the Runner accepts one as input and mutates it in place) and the scripted model, which the
 * runner calls exactly once per turn, serialises that state before it answers: the cheapest
 * per-turn boundary there is. Each snapshot holds the whole run (items and raw model
 * responses), so the bytes grow with the square of the steps; that is the SDK's format. And
 * `toString()` itself is O(n²) in 0.20.0 (it re-validates every completed tool call against the
 * whole history, throwing and catching an error per mismatched candidate), so per-turn snapshots
 * make a run O(n³): see `snapshotEveryTurn`.
 */
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import {
  Agent,
  type AgentInputItem,
  type Model,
  type ModelRequest,
  type ModelResponse,
  type protocol,
  RunContext,
  Runner,
  RunState,
  setTracingDisabled,
  tool,
  Usage,
} from '@openai/agents-core';
import { z } from 'zod';
import {
  ANSWER,
  type CheckpointTimes,
  type Contestant,
  GOAL,
  nextAction,
  type RunReport,
  TOOL,
  timeLoads,
  toolResult,
} from '../workload.js';

setTracingDisabled(true);

const echo = tool({
  name: TOOL,
  description: 'Echoes ~200 bytes for step n.',
  parameters: z.object({ n: z.number().int() }),
  execute: async ({ n }) => JSON.stringify(toolResult(n)),
});

/**
 * Tool calls made so far, read from the last input item (the `echo` result carries its `n`):
 * O(1) per turn, so the policy adds no per-step cost that grows with the history.
 */
function callsSoFar(input: string | AgentInputItem[]): number {
  const last = typeof input === 'string' ? undefined : input.at(-1);
  if (last?.type !== 'function_call_result') return 0;
  const text = typeof last.output === 'string' ? last.output : 'text' in last.output ? last.output.text : '';
  return (JSON.parse(text) as { n: number }).n + 1;
}

function respond(calls: number, steps: number): protocol.OutputModelItem {
  const action = nextAction(calls, steps);
  if ('final' in action) {
    return {
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: action.final }],
    };
  }
  const callId = `call_${action.args.n}`;
  return {
    type: 'function_call',
    id: callId,
    callId,
    name: action.tool,
    arguments: JSON.stringify(action.args),
    status: 'completed',
  };
}

/** The scripted policy as a `Model`; `beforeTurn` runs once per turn, before it answers. */
class ScriptedModel implements Model {
  constructor(
    private readonly steps: number,
    private readonly beforeTurn: () => void,
  ) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.beforeTurn();
    const calls = callsSoFar(request.input);
    return { usage: new Usage(), output: [respond(calls, this.steps)], responseId: `resp_${calls}` };
  }

  getStreamedResponse(): AsyncIterable<protocol.StreamEvent> {
    throw new Error('ScriptedModel: the benchmark runs non-streaming');
  }
}

interface Finished {
  agent: Agent;
  state: RunState<undefined, Agent>;
  bytes: number;
}

/**
 * One run of `steps` steps; throws unless it answered right. With `everyTurn`, the RunState is
 * serialised at every turn but the first and once at the end, and `bytes` sums those sizes.
 */
async function runAgent(runner: Runner, steps: number, runId: string, everyTurn: boolean): Promise<Finished> {
  let bytes = 0;
  let turns = 0;
  const snapshot = (): void => {
    if (everyTurn && turns++ > 0) bytes += Buffer.byteLength(state.toString());
  };
  const agent = new Agent({
    name: 'bench',
    instructions: GOAL,
    model: new ScriptedModel(steps, snapshot),
    tools: [echo],
  });
  // steps tool turns plus the answering turn; the margin keeps MaxTurnsExceeded off the table.
  const state = new RunState<undefined, Agent>(new RunContext(undefined), GOAL, agent, steps + 2);
  const result = await runner.run(agent, state);
  if (everyTurn) bytes += Buffer.byteLength(result.state.toString());
  const calls = result.newItems.filter((item) => item.type === 'tool_call_output_item').length;
  if (calls !== steps || result.finalOutput !== ANSWER) {
    throw new Error(
      `openai-agents run ${runId}: expected ${ANSWER} after ${steps} tool calls, got ${calls} calls and ${String(result.finalOutput)}`,
    );
  }
  return { agent, state: result.state, bytes };
}

/** Options of {@link openaiAgents}. */
export interface OpenaiAgentsOptions {
  /**
   * Serialise the RunState every turn (the contestant the benchmark means). `false` runs the bare
   * loop and reports `bytes: null`: the SDK's `toString()` validates completed tool calls against
   * the whole history (O(n²) per call, measured ~18 s at 1,000 steps), so per-turn snapshots make
   * a run O(n³) and runs past a few hundred steps take hours.
   * @default true
   */
  snapshotEveryTurn?: boolean;
}

/** OpenAI Agents SDK, RunState serialised every turn (kept in memory, not written anywhere). */
export function openaiAgents(options: OpenaiAgentsOptions = {}): Contestant {
  const everyTurn = options.snapshotEveryTurn ?? true;
  const runner = new Runner({ tracingDisabled: true });
  return {
    name: everyTurn ? 'OpenAI Agents SDK' : 'OpenAI Agents SDK (no snapshots)',
    persists: everyTurn ? 'RunState#toString() per turn (in memory)' : 'nothing',
    async run(steps: number, runId: string): Promise<RunReport> {
      const { bytes } = await runAgent(runner, steps, runId, everyTurn);
      return { bytes: everyTurn ? bytes : null };
    },
    async checkpoint(steps: number, runId: string): Promise<CheckpointTimes> {
      // The final state is the same with or without per-turn snapshots, so skip them here.
      const { agent, state } = await runAgent(runner, steps, runId, false);
      const t = performance.now();
      const saved = state.toString();
      const saveMs = performance.now() - t;
      const loadMs = await timeLoads(
        () => RunState.fromString(agent, saved),
        (loaded) => {
          if (loaded.history.length !== state.history.length)
            throw new Error(`openai-agents: restored state of run ${runId} lost history`);
        },
      );
      return { saveMs, loadMs, bytes: Buffer.byteLength(saved) };
    },
  };
}
