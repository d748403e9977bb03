/**
 * Tollgate's spans: one per drive of a run (`invoke_agent`), one per policy call (`chat`) and one
 * per tool call (`execute_tool`), children of the drive's span, with the OpenTelemetry GenAI
 * semantic conventions' attributes where they apply and `tollgate.*` ones for the rest
 * (docs/observability.md lists them). Built only from values the run already checked and keeps.
 */
import { isExpiredAt } from '../../machines/calls.js';
import type { PolicyInput } from '../../machines/events.js';
import type { AgentContext, AgentEvent, Decision, Status, StepCall, ToolOutcome, Usage } from '../../machines/types.js';
import { modelOf } from '../policy-model.js';
import type { TracerLike } from '../tracer.js';
import type { Tool } from '../types.js';
import { type Remaining, remainingOf } from './limits.js';
import { SPAN_KIND, Span, startSpan } from './tracing.js';

/** What the budgets leave, as attributes (an unlimited budget is left out). */
function budgetLeft(left: Remaining) {
  return {
    'tollgate.budget.steps_left': left.steps,
    'tollgate.budget.tokens_left': left.tokens,
    'tollgate.budget.active_ms_left': left.activeMs === null ? null : Math.round(left.activeMs),
    'tollgate.budget.cost_usd_left': left.costUsd,
  };
}

/** What starts a drive of the run: the user's event, or `resume` (a run restored mid-call). */
function triggerOf(event: AgentEvent | null): string {
  return event === null ? 'resume' : event.type.toLowerCase();
}

/** A drive of the run: from a user's event (or `run()` on a run restored mid-call) until it settles. */
export function startRunSpan(
  tracer: TracerLike | undefined,
  agent: string | null,
  context: AgentContext,
  event: AgentEvent | null,
): Span {
  const span = startSpan(tracer, agent === null ? 'invoke_agent' : `invoke_agent ${agent}`, SPAN_KIND.internal, null, {
    'gen_ai.operation.name': 'invoke_agent',
    'gen_ai.agent.name': agent,
    'gen_ai.conversation.id': context.runId,
    'tollgate.run.id': context.runId,
    'tollgate.run.trigger': triggerOf(event),
  });
  recordRunEvent(span, context, event);
  return span;
}

/** A user's event on the drive's span: each approval decided (or expired), a cancellation. */
export function recordRunEvent(span: Span, context: AgentContext, event: AgentEvent | null): void {
  if (event?.type === 'CANCEL') span.event('tollgate.cancel', { 'tollgate.cancel.reason': event.reason });
  if (event?.type === 'DECIDE') {
    for (const decision of event.decisions) {
      const call = context.calls.find((c) => c.id === decision.callId);
      span.event('tollgate.approval', {
        'tollgate.approval.decision': decision.approve ? 'approved' : 'denied',
        'tollgate.approval.always': decision.always === true,
        'tollgate.call.id': decision.callId,
        'tollgate.call.key': call?.key,
        'gen_ai.tool.name': call?.tool,
      });
    }
  }
  if (event?.type === 'EXPIRE') {
    for (const call of context.calls.filter((c) => isExpiredAt(c, event.at))) {
      span.event('tollgate.approval', {
        'tollgate.approval.decision': 'expired',
        'tollgate.call.id': call.id,
        'tollgate.call.key': call.key,
        'gen_ai.tool.name': call.tool,
      });
    }
  }
}

/** Ends a drive: the status it settled in, the tokens it used, the budgets left, why it stopped. */
export function endRunSpan(span: Span, context: AgentContext, status: Status, usedBefore: Usage, fault?: string): void {
  span.set({
    'tollgate.run.status': status,
    'tollgate.step': context.steps,
    'gen_ai.usage.input_tokens': context.usage.inputTokens - usedBefore.inputTokens,
    'gen_ai.usage.output_tokens': context.usage.outputTokens - usedBefore.outputTokens,
    'tollgate.approval.pending': context.calls.filter((c) => c.state === 'pending').length,
    'tollgate.budget.stopped_by': status === 'budget_exhausted' ? context.stoppedBy : null,
    ...budgetLeft(remainingOf(context)),
  });
  if (fault !== undefined) span.fail(fault);
  else if (status === 'failed' && context.error !== null) span.fail(context.error);
  span.end();
}

/** A policy call (its retries included), under the drive's span. */
export function startPolicySpan(
  tracer: TracerLike | undefined,
  parent: Span | null,
  policy: unknown,
  input: PolicyInput,
  left: Remaining,
): Span {
  if (tracer === undefined) return Span.none;
  const model = modelOf(policy);
  return startSpan(tracer, model ? `chat ${model.model}` : 'chat', SPAN_KIND.client, parent, {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': model?.provider,
    'gen_ai.request.model': model?.model,
    'tollgate.run.id': input.runId,
    'tollgate.step': input.step,
    ...budgetLeft(left),
  });
}

/**
 * Ends a policy call's span with what the runtime made of the action, and the model that
 * answered (`usage.model`, as the adapters report the API's name for it).
 */
export function endPolicySpan(span: Span, decision: Decision, attempts: number, model: string | null): void {
  span.set({
    'gen_ai.response.model': model,
    'gen_ai.usage.input_tokens': decision.usage?.inputTokens,
    'gen_ai.usage.output_tokens': decision.usage?.outputTokens,
    'tollgate.usage.cost_usd': decision.cost !== undefined && 'usd' in decision.cost ? decision.cost.usd : null,
    'tollgate.policy.attempts': attempts,
    'tollgate.action': decision.type,
    'tollgate.action.calls': decision.type === 'calls' ? decision.calls.length : null,
    // A malformed action is an observation the model reads next, not a failure of the call.
    'tollgate.action.error': decision.type === 'malformed' ? decision.error : null,
  });
  span.end();
}

/** How the call came to run: a human's approval, a standing one, or none needed. */
function approvalOf(call: StepCall): string {
  if (call.approval === null) return 'not_required';
  return call.approval.standing === undefined ? 'approved' : 'standing';
}

/** A tool call, under the drive's span. */
export function startToolSpan(
  tracer: TracerLike | undefined,
  parent: Span | null,
  runId: string,
  call: StepCall,
  tool: Tool | undefined,
  recovered: boolean,
): Span {
  if (tracer === undefined) return Span.none;
  return startSpan(tracer, `execute_tool ${call.tool}`, SPAN_KIND.internal, parent, {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': call.tool,
    'gen_ai.tool.call.id': call.toolCallId,
    'gen_ai.tool.type': 'function',
    'tollgate.run.id': runId,
    'tollgate.step': call.step,
    'tollgate.call.key': call.key,
    'tollgate.call.id': call.id,
    'tollgate.tool.side_effect': tool === undefined ? null : tool.sideEffect === true,
    'tollgate.approval.decision': approvalOf(call),
    'tollgate.call.recovered': recovered,
  });
}

/** Ends a tool call's span: a tool's error (or a refusal) is the span's error. */
export function endToolSpan(span: Span, outcome: ToolOutcome): void {
  span.set({ 'tollgate.call.outcome': outcome.type });
  if (outcome.type === 'error') span.fail(outcome.error);
  span.end();
}
