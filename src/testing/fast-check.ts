/**
 * What needs fast-check (`tollgate/testing/fast-check`, with fast-check 4 installed): the
 * arbitraries of what an agent meets, and `modelTest`, a model-based test of your own agent.
 */
export {
  type ActionOptions,
  action,
  decision,
  hostileArgs,
  hostileObject,
  hostileValue,
  type Make,
  play,
  type ToolOutcome,
  toolOutcome,
  usageReport,
} from './arbitraries.js';
export {
  type CrashPoint,
  type ModelTestOptions,
  type ModelTestReport,
  type Move,
  modelTest,
  type Scenario,
} from './model-test.js';
