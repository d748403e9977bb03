// Run by test/resume-process.int.test.ts in a fresh Node process: resume a checkpoint file and finish it.
import { readFileSync } from 'node:fs';
import { Agent } from '../../src/index.js';
import { recorder, sequence } from './helpers.js';

const blob = readFileSync(process.argv[2] as string, 'utf8');
const pay = recorder('pay', { sideEffect: true, idempotent: true });
const options = { policy: sequence({ final: 'paid' }), tools: [pay.tool] };
const same = Agent.resume(blob, options).checkpoint() === blob;
const agent = Agent.resume(blob, options);
const status = await agent.run();
process.stdout.write(JSON.stringify({ same, status, calls: pay.calls, state: agent.state }));
