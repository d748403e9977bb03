/**
 * LangGraph.js contestants: the agent loop built the way the LangGraph docs build it, a
 * `StateGraph(MessagesAnnotation)` whose `policy` node calls a chat model and whose `tools` node
 * is the prebuilt `ToolNode`, joined by the prebuilt `toolsCondition` edge. The chat model is a
 * scripted `BaseChatModel` (no network) that plays `nextAction`. Every superstep is checkpointed
 * with LangGraph's default durability ("async": each checkpoint is written while the next
 * superstep runs, and the run waits for all of them before it returns).
 *
 * `bytes` is what the checkpointer holds for the run's thread once the run has finished: the
 * serialised checkpoints and their metadata plus the serialised pending writes. The messages
 * channel is a plain reducer channel (`messagesStateReducer`), so every checkpoint carries the
 * whole history and the bytes grow with the square of the steps. That is LangGraph's default;
 * the beta `MessagesDeltaValue` channel, which stores deltas, is not what the docs build.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { BaseChatModel, type BaseChatModelCallOptions } from '@langchain/core/language_models/chat_models';
import { AIMessage, type BaseMessage, HumanMessage } from '@langchain/core/messages';
import type { ChatResult } from '@langchain/core/outputs';
import { tool } from '@langchain/core/tools';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { type BaseCheckpointSaver, MemorySaver, uuid6 } from '@langchain/langgraph-checkpoint';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
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

interface ScriptedCallOptions extends BaseChatModelCallOptions {
  steps: number;
}

/**
 * A chat model that plays the scripted policy. It reads the number of tool calls made so far
 * from the last message it is given (the `echo` result carries its `n`), which costs O(1) per
 * call, so the policy itself adds no per-step cost that grows with the history.
 */
class ScriptedChatModel extends BaseChatModel<ScriptedCallOptions> {
  _llmType(): string {
    return 'scripted';
  }

  async _generate(messages: BaseMessage[], options: this['ParsedCallOptions']): Promise<ChatResult> {
    const action = nextAction(callsSoFar(messages), options.steps);
    const message =
      'final' in action
        ? new AIMessage(action.final)
        : new AIMessage({
            content: '',
            tool_calls: [{ name: action.tool, args: action.args, id: `call_${action.args.n}`, type: 'tool_call' }],
          });
    return { generations: [{ text: typeof message.content === 'string' ? message.content : '', message }] };
  }
}

function callsSoFar(messages: BaseMessage[]): number {
  const last = messages.at(-1);
  if (last === undefined || last.getType() !== 'tool') return 0;
  return (JSON.parse(String(last.content)) as { n: number }).n + 1;
}

const echo = tool(async ({ n }) => JSON.stringify(toolResult(n)), {
  name: TOOL,
  description: 'Echoes ~200 bytes for step n.',
  schema: z.object({ n: z.number().int() }),
});

/** The agent graph, compiled once per contestant; the run's step budget travels in `configurable`. */
function buildGraph(checkpointer: BaseCheckpointSaver) {
  const model = new ScriptedChatModel({});
  return new StateGraph(MessagesAnnotation)
    .addNode('policy', async (state, config) => {
      const steps = Number(config.configurable?.['steps']);
      return { messages: [await model.invoke(state.messages, { steps })] };
    })
    .addNode('tools', new ToolNode([echo]))
    .addEdge(START, 'policy')
    .addConditionalEdges('policy', toolsCondition, ['tools', END])
    .addEdge('tools', 'policy')
    .compile({ checkpointer });
}

type Graph = ReturnType<typeof buildGraph>;

/** Runs the graph on a fresh thread and throws unless it answered after exactly `steps` calls. */
async function runGraph(graph: Graph, steps: number, runId: string): Promise<void> {
  const final = await graph.invoke(
    { messages: [new HumanMessage(GOAL)] },
    // Each step is two supersteps (policy, tools), plus the final policy call.
    { configurable: { thread_id: runId, steps }, recursionLimit: 2 * steps + 10 },
  );
  const calls = final.messages.filter((m) => m.getType() === 'tool').length;
  const last = final.messages.at(-1);
  if (calls !== steps || last?.getType() !== 'ai' || last.content !== ANSWER) {
    throw new Error(
      `langgraph run ${runId}: expected ${ANSWER} after ${steps} tool calls, got ${calls} calls and ${String(last?.content)}`,
    );
  }
}

/** Bytes MemorySaver holds for one thread: checkpoint + metadata blobs and the write values. */
function memoryBytes(saver: MemorySaver, threadId: string): number {
  let bytes = 0;
  for (const checkpoints of Object.values(saver.storage[threadId] ?? {})) {
    for (const [checkpoint, metadata] of Object.values(checkpoints))
      bytes += checkpoint.byteLength + metadata.byteLength;
  }
  for (const [key, writes] of Object.entries(saver.writes)) {
    if ((JSON.parse(key) as string[])[0] !== threadId) continue;
    for (const [, , value] of Object.values(writes)) bytes += value.byteLength;
  }
  return bytes;
}

/** Bytes SqliteSaver stored for one thread: length of the checkpoint, metadata and write-value blobs. */
function sqliteBytes(saver: SqliteSaver, threadId: string): number {
  const checkpoints = saver.db
    .prepare(
      'SELECT COALESCE(SUM(length(checkpoint)) + SUM(length(metadata)), 0) AS n FROM checkpoints WHERE thread_id = ?',
    )
    .get(threadId) as { n: number };
  const writes = saver.db
    .prepare('SELECT COALESCE(SUM(length(value)), 0) AS n FROM writes WHERE thread_id = ?')
    .get(threadId) as { n: number };
  return checkpoints.n + writes.n;
}

/**
 * Times one save of the thread's latest checkpoint (re-put under a fresh id, as the next
 * superstep would) and one load of it (`getTuple` reads and deserialises checkpoint and writes).
 */
async function timeCheckpoint(saver: BaseCheckpointSaver, threadId: string): Promise<Omit<CheckpointTimes, 'bytes'>> {
  const config = { configurable: { thread_id: threadId } };
  const latest = await saver.getTuple(config);
  if (latest === undefined) throw new Error(`langgraph: no checkpoint for thread ${threadId}`);
  const next = { ...latest.checkpoint, id: uuid6(-1) };
  const t = performance.now();
  // newVersions only matters to savers that store channel blobs separately; neither of these does.
  await saver.put(
    latest.config,
    next,
    latest.metadata ?? { source: 'loop', step: 0, parents: {} },
    next.channel_versions,
  );
  const saveMs = performance.now() - t;
  const loadMs = await timeLoads(
    () => saver.getTuple(config),
    (loaded) => {
      if (loaded?.checkpoint.id !== next.id)
        throw new Error(`langgraph: loaded checkpoint is not the one just saved (thread ${threadId})`);
    },
  );
  return { saveMs, loadMs };
}

/** Serialised size of one checkpoint tuple's checkpoint + metadata, as the saver's serde writes it. */
async function checkpointBytes(saver: BaseCheckpointSaver, threadId: string): Promise<number> {
  const latest = await saver.getTuple({ configurable: { thread_id: threadId } });
  if (latest === undefined) throw new Error(`langgraph: no checkpoint for thread ${threadId}`);
  const [[, checkpoint], [, metadata]] = await Promise.all([
    saver.serde.dumpsTyped(latest.checkpoint),
    saver.serde.dumpsTyped(latest.metadata),
  ]);
  return checkpoint.length + metadata.length;
}

/** LangGraph with the in-memory `MemorySaver` (it still serialises every checkpoint). */
export function langgraphMemory(): Contestant {
  const saver = new MemorySaver();
  const graph = buildGraph(saver);
  return {
    name: 'LangGraph (MemorySaver)',
    persists: 'serialised checkpoints in memory',
    async run(steps: number, runId: string): Promise<RunReport> {
      await runGraph(graph, steps, runId);
      const bytes = memoryBytes(saver, runId);
      // Drop the thread so the saver does not keep every run's history across the benchmark.
      await saver.deleteThread(runId);
      return { bytes };
    },
    async checkpoint(steps: number, runId: string): Promise<CheckpointTimes> {
      await runGraph(graph, steps, runId);
      const times = await timeCheckpoint(saver, runId);
      const bytes = await checkpointBytes(saver, runId);
      await saver.deleteThread(runId);
      return { ...times, bytes };
    },
  };
}

/**
 * LangGraph with `SqliteSaver` on a database file in a temp dir made under `dir` (WAL, as the
 * saver sets it up). `bytes` is the sum of `length()` of the `checkpoint`, `metadata` and
 * `writes.value` blobs stored for the run's thread: payload only, not SQLite's page overhead.
 */
export function langgraphSqlite(dir: string = tmpdir()): Contestant {
  let tempDir: string | undefined;
  let saver: SqliteSaver | undefined;
  let graph: Graph | undefined;
  const ready = (): { saver: SqliteSaver; graph: Graph } => {
    if (saver === undefined || graph === undefined) throw new Error('langgraphSqlite: setup() was not called');
    return { saver, graph };
  };
  return {
    name: 'LangGraph (SqliteSaver)',
    persists: 'SQLite on disk (WAL)',
    async setup(): Promise<void> {
      tempDir = await mkdtemp(join(dir, 'bench-langgraph-'));
      saver = SqliteSaver.fromConnString(join(tempDir, 'checkpoints.db'));
      graph = buildGraph(saver);
    },
    async run(steps: number, runId: string): Promise<RunReport> {
      const c = ready();
      await runGraph(c.graph, steps, runId);
      const bytes = sqliteBytes(c.saver, runId);
      await c.saver.deleteThread(runId);
      return { bytes };
    },
    async checkpoint(steps: number, runId: string): Promise<CheckpointTimes> {
      const c = ready();
      await runGraph(c.graph, steps, runId);
      const times = await timeCheckpoint(c.saver, runId);
      const bytes = await checkpointBytes(c.saver, runId);
      await c.saver.deleteThread(runId);
      return { ...times, bytes };
    },
    async teardown(): Promise<void> {
      saver?.db.close();
      if (tempDir !== undefined) await rm(tempDir, { recursive: true, force: true });
      saver = undefined;
      graph = undefined;
      tempDir = undefined;
    },
  };
}
