/**
 * One run's card: its goal, its history (collapsible, loaded when opened), and, while it awaits
 * approval, every pending call with its decision controls. The calls of a run are decided
 * together: one request records them all, or none.
 */
import { countdown, el, explain, historyList, pretty, when } from './render.js';

/** Drafts by call id, so that a card redrawn by a live update keeps what the approver typed. */
const drafts = new Map();
const draftOf = (id) => {
  if (!drafts.has(id)) drafts.set(id, { choice: '', note: '', args: null, check: null });
  return drafts.get(id);
};

/**
 * The card of `run`. `app` gives `api(method, path, body)`, `now()` (server time, ms),
 * `detail(runId)` (the run with history and tools, cached) and `refresh()`.
 */
export function runCard(run, app) {
  const message = el('p', { class: 'message', role: 'status' });
  const card = el('article', { class: 'run', 'data-run': run.runId });
  const head = el(
    'header',
    {},
    el(
      'h2',
      {},
      el('span', { class: 'run-id', text: run.runId }),
      run.agent ? el('span', { class: 'agent', text: run.agent }) : null,
    ),
    el('div', { class: 'meta', text: `${run.status} · step ${run.steps} · updated ${when(run.updatedAt)}` }),
  );
  const goal = el('p', { class: 'goal' }, el('b', { text: 'Goal ' }), run.goal ?? '(none)');
  const details = el('details', { class: 'history-box' }, el('summary', { text: 'History' }));
  details.addEventListener('toggle', async () => {
    if (!details.open || details.dataset.loaded) return;
    details.dataset.loaded = '1';
    try {
      const { run: full } = await app.detail(run.runId);
      details.append(historyList(full.history));
    } catch (error) {
      details.append(el('p', { class: 'error', text: explain(error) }));
    }
  });
  card.append(head, goal, details);
  if (run.outcome !== null && run.outcome !== undefined) {
    card.append(
      el(
        'p',
        { class: 'outcome' },
        el('b', { text: 'Outcome ' }),
        typeof run.outcome === 'string' ? run.outcome : pretty(run.outcome),
      ),
    );
  }
  if (run.decision) {
    card.append(
      el('p', {
        class: 'recorded',
        text: `Decision recorded by ${run.decision.by} at ${when(run.decision.at)}: ${decided(run)}. A worker will apply it.`,
      }),
    );
  } else if (run.status === 'awaiting_approval') {
    const quiet = () => {
      message.textContent = '';
    };
    const calls = run.pendingCalls.map((call) => callBox(run, call, app, quiet));
    const send = el('button', { type: 'button', class: 'send', text: 'Record decisions' });
    send.addEventListener('click', () => submit(run, send, message, app));
    card.append(el('div', { class: 'calls' }, calls), el('div', { class: 'actions' }, send, message));
  }
  return card;
}

/** What a recorded decision says of each pending call: approved (as asked, or edited) or denied, with the note. */
function decided(run) {
  return run.pendingCalls
    .map((call) => {
      const d = run.decision.decisions[call.id];
      if (!d) return `${call.tool} not decided`;
      const note = d.note ? ` (“${d.note}”)` : '';
      if (!d.approve) return `${call.tool} denied${note}`;
      return `${call.tool} approved${d.args ? ` with its arguments edited to ${JSON.stringify(d.args)}` : ''}${note}`;
    })
    .join('; ');
}

/** One pending call with its decision controls; `touched` is called when the approver changes something. */
function callBox(run, call, app, touched) {
  const draft = draftOf(call.id);
  const left = countdown(call, app.now());
  const timer = el('span', {
    class: left.expired ? 'countdown expired' : 'countdown',
    'data-expires': call.expiresAt ?? '',
    text: left.text,
  });
  const choice = el(
    'select',
    { 'aria-label': `Decision for ${call.tool} (${call.key})`, class: 'choice' },
    el('option', { value: '', text: 'undecided' }),
    el('option', { value: 'approve', text: 'approve', disabled: left.expired }),
    el('option', {
      value: 'edit',
      text: 'edit arguments, then approve',
      disabled: left.expired || call.outcome === 'unknown',
    }),
    el('option', { value: 'deny', text: 'deny' }),
  );
  choice.value = draft.choice;
  const note = el('input', {
    type: 'text',
    class: 'note',
    'aria-label': `Note for ${call.tool} (${call.key})`,
    placeholder: 'note (required to deny)',
    maxlength: 4000,
  });
  note.value = draft.note;
  note.addEventListener('input', () => {
    draft.note = note.value;
    touched();
  });
  const editor = el('textarea', {
    class: 'args-editor',
    'aria-label': `Arguments for ${call.tool} (${call.key})`,
    rows: 8,
    spellcheck: 'false',
  });
  const verdict = el('p', { class: 'verdict', role: 'status' });
  const editBox = el('div', { class: 'edit', hidden: draft.choice !== 'edit' }, editor, verdict);
  editor.value = draft.args ?? pretty(call.args);
  let checking = 0;
  /** Checks the editor's text: JSON syntax here, then the tool's schema and rule on the server. */
  const check = async () => {
    const text = editor.value;
    draft.args = text;
    const mine = ++checking;
    let result;
    let args;
    try {
      args = JSON.parse(text);
    } catch (error) {
      result = { ok: false, error: `not JSON: ${error.message}` };
    }
    if (args !== undefined && (args === null || typeof args !== 'object' || Array.isArray(args))) {
      result = { ok: false, error: 'the arguments must be a JSON object' };
    } else if (args !== undefined) {
      verdict.textContent = 'checking against the tool’s schema…';
      try {
        const path = `/api/runs/${encodeURIComponent(run.runId)}/calls/${encodeURIComponent(call.id)}/check`;
        result = await app.api('POST', path, { args });
      } catch (error) {
        result = { ok: false, error: explain(error) };
      }
    }
    // A later edit (or check) wins: an answer about older text changes nothing.
    if (mine !== checking || editor.value !== text) return;
    draft.check = result;
    verdict.className = result.ok ? 'verdict ok' : 'verdict bad';
    verdict.textContent = result.ok ? '✓ valid for the tool’s schema' : `✗ ${result.error}`;
  };
  let debounce = null;
  editor.addEventListener('input', () => {
    touched();
    // What is sent is what was checked: until the check of this text answers, nothing is.
    draft.args = editor.value;
    draft.check = null;
    checking++;
    clearTimeout(debounce);
    debounce = setTimeout(check, 250);
  });
  choice.addEventListener('change', () => {
    touched();
    draft.choice = choice.value;
    editBox.hidden = choice.value !== 'edit';
    if (choice.value === 'edit') void check();
  });
  if (draft.choice === 'edit') void check();
  return el(
    'section',
    { class: 'call', 'data-call': call.id },
    el('h3', {}, el('code', { text: call.tool }), ' ', timer),
    call.outcome === 'unknown'
      ? el('p', {
          class: 'warning',
          role: 'note',
          text: '⚠ Outcome unknown: this call was in flight when a worker crashed. It may or may not have taken effect; approving runs it again.',
        })
      : null,
    el(
      'dl',
      {},
      el('dt', { text: 'key' }),
      el('dd', { text: call.key }),
      el('dt', { text: 'requested' }),
      el('dd', { text: when(call.requestedAt) }),
      el('dt', { text: 'attempt' }),
      el('dd', { text: String(call.attempt) }),
    ),
    el('pre', { class: 'args', text: pretty(call.args) }),
    el('div', { class: 'controls' }, choice, note),
    editBox,
  );
}

async function submit(run, button, message, app) {
  const decisions = {};
  for (const call of run.pendingCalls) {
    const draft = draftOf(call.id);
    if (!draft.choice) continue;
    if (draft.choice === 'deny') {
      if (!draft.note.trim()) return say(message, `A denial needs a note: say why (${call.tool}).`, true);
      decisions[call.id] = { approve: false, note: draft.note };
    } else if (draft.choice === 'edit') {
      if (!draft.check?.ok)
        return say(message, `Fix the edited arguments of ${call.tool} first (or wait for their check).`, true);
      decisions[call.id] = { approve: true, note: draft.note, args: JSON.parse(draft.args) };
    } else {
      decisions[call.id] = { approve: true, note: draft.note };
    }
  }
  if (Object.keys(decisions).length === 0) return say(message, 'Choose a decision for at least one call.', true);
  button.disabled = true;
  try {
    const result = await app.api('POST', `/api/runs/${encodeURIComponent(run.runId)}/decisions`, { decisions });
    for (const id of Object.keys(decisions)) drafts.delete(id);
    const values = Object.values(decisions);
    const approved = values.filter((d) => d.approve).length;
    const counts = [
      approved && `${approved} approved`,
      values.length - approved && `${values.length - approved} denied`,
    ];
    say(
      message,
      `Recorded by ${result.recorded.by}: ${counts.filter(Boolean).join(', ')}. A worker will apply it.`,
      false,
    );
    app.refresh();
  } catch (error) {
    say(message, explain(error), true);
  } finally {
    button.disabled = false;
  }
}

function say(node, text, bad) {
  node.className = bad ? 'message error' : 'message ok';
  node.setAttribute('role', bad ? 'alert' : 'status');
  node.textContent = text;
}

/** Updates every countdown on the page to server time `now` (ms). */
export function tick(now) {
  for (const node of document.querySelectorAll('.countdown[data-expires]')) {
    if (!node.dataset.expires) continue;
    const left = countdown({ expiresAt: node.dataset.expires }, now);
    node.textContent = left.text;
    node.classList.toggle('expired', left.expired);
  }
}
