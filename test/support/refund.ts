/** The seed scenario: search, then email ops (side effect), then answer. */
import type { HistoryEntry, Policy, Tool } from '../../src/index.js';

export interface Sent {
  to: string;
  key: string;
}

export function refundTools(sent: Sent[]): Tool[] {
  return [
    {
      name: 'search',
      fn: ({ q }: { q?: string }) => {
        if (!q) throw new Error('empty query');
        return { hits: [`refund policy for ${q}: 30 days`] };
      },
    },
    {
      name: 'send_email',
      sideEffect: true,
      fn: ({ to }: { to: string }, key: string) => {
        sent.push({ to, key });
        return { sent: true };
      },
    },
  ];
}

export const refundPolicy: Policy = (history: HistoryEntry[]) => {
  const last = history[history.length - 1];
  if (history.length === 1) return { tool: 'search', args: { q: 'refund policy' } };
  if (last?.role === 'tool' && last.tool === 'search') {
    return { tool: 'send_email', args: { to: 'ops@example.com', body: 'refund policy: 30 days' } };
  }
  if (last?.role === 'tool' && last.tool === 'send_email') {
    return { final: 'error' in last ? 'cancelled' : 'emailed' };
  }
  return { final: 'confused' };
};
