/**
 * The inbox page's DOM building. Everything that came from a model, a tool or a user (goals,
 * arguments, results, notes, names) is put in the page as text (text nodes, `textContent`,
 * `value`), never parsed as HTML: a `<script>` in a tool argument shows as those characters.
 */

/** An element with attributes and children; strings become text nodes. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') node.className = value;
    else if (name === 'text') node.textContent = value;
    else if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return node;
}

/** Pretty JSON, as text. */
export const pretty = (value) => JSON.stringify(value, null, 2);

/** "3m 05s", "2h 10m", "1d 4h". */
export function duration(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = String(s % 60).padStart(2, '0');
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${String(m).padStart(2, '0')}m`;
  return `${m}m ${sec}s`;
}

/** A local date and time for an ISO-8601 time. */
export const when = (iso) => (iso ? new Date(iso).toLocaleString() : '—');

/** What the countdown of a call says at server time `now` (ms). */
export function countdown(call, now) {
  if (!call.expiresAt) return { text: 'never expires', expired: false };
  const left = Date.parse(call.expiresAt) - now;
  return left <= 0 ? { text: 'expired', expired: true } : { text: `expires in ${duration(left)}`, expired: false };
}

/** One history entry, readable. */
function entry(e) {
  if (e.role === 'user') return el('li', { class: 'h-user' }, el('b', { text: 'goal' }), ' ', e.content);
  if (e.role === 'summary') {
    return el(
      'li',
      { class: 'h-summary' },
      el('b', { text: `summary of entries ${e.covers.from}–${e.covers.to}` }),
      ' ',
      e.text,
    );
  }
  if (e.role === 'assistant' && 'final' in e) {
    return el(
      'li',
      { class: 'h-final' },
      el('b', { text: 'answer' }),
      ' ',
      typeof e.final === 'string' ? e.final : pretty(e.final),
    );
  }
  if (e.role === 'assistant') {
    const calls = e.calls ?? [{ tool: e.tool, args: e.args }];
    return el(
      'li',
      { class: 'h-call' },
      el('b', { text: calls.length > 1 ? `${calls.length} calls` : 'call' }),
      e.text ? ` ${e.text}` : '',
      ...calls.map((c) => el('div', {}, el('code', { text: c.tool }), el('pre', { text: pretty(c.args) }))),
    );
  }
  const approval = e.approval
    ? el(
        'div',
        { class: 'h-approval' },
        `${e.approval.approved ? 'approved' : 'denied'} by ${e.approval.by}`,
        e.approval.args ? `, its arguments edited to ${JSON.stringify(e.approval.args)}` : '',
        e.approval.note ? ` — “${e.approval.note}”` : '',
      )
    : null;
  const body = 'error' in e ? el('pre', { class: 'h-error', text: e.error }) : el('pre', { text: pretty(e.result) });
  return el('li', { class: 'h-tool' }, el('b', { text: 'result' }), ' ', el('code', { text: e.tool }), approval, body);
}

/** The history as a list. */
export function historyList(history) {
  return el('ol', { class: 'history' }, history.map(entry));
}

/** The clear words for an API error code. */
export function explain(error) {
  const said = error?.message ?? 'the request failed';
  switch (error?.code) {
    case 'expired':
      return `This approval has expired: nothing was recorded. (${said})`;
    case 'stale':
      return `This call is no longer pending — it was decided elsewhere or asked again: nothing was recorded. (${said})`;
    case 'already_decided':
      return `A decision is already recorded for this run: nothing was recorded. (${said})`;
    case 'not_pending':
      return `This run no longer awaits approval: nothing was recorded. (${said})`;
    case 'busy':
      return 'A worker is working on this run right now: nothing was recorded. Try again in a moment.';
    case 'edit_rejected':
      return `The edited arguments were refused: ${said}`;
    case 'not_found':
      return `This run is gone: ${said}`;
    default:
      return said;
  }
}
