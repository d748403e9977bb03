/**
 * The inbox page: signs in (a token, traded for a session cookie), lists runs by status with
 * filters, and keeps the list live from the server's event stream. Plain DOM, no framework, no
 * inline script (the Content-Security-Policy allows only this origin's files).
 */
import { runCard, tick } from './card.js';
import { el, explain } from './render.js';

const $ = (id) => document.getElementById(id);
const state = {
  csrf: null,
  status: 'awaiting_approval',
  offset: 0,
  cards: new Map(),
  details: new Map(),
  events: null,
};

/** Calls the API; throws the API's `error` object (with `status`) when it refuses. */
async function api(method, path, body) {
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && state.csrf) headers['X-Tollgate-CSRF'] = state.csrf;
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    if (response.status === 401) showLogin('Your session has ended: sign in again.');
    throw { status: response.status, ...(data.error ?? { message: `HTTP ${response.status}` }) };
  }
  return data;
}

const now = () => Date.now() + state.offset;

const app = {
  api,
  now,
  refresh: () => scheduleRefresh(0),
  async detail(runId) {
    const hit = state.details.get(runId);
    if (hit) return hit;
    const found = await api('GET', `/api/runs/${encodeURIComponent(runId)}`);
    state.details.set(runId, found);
    return found;
  },
};

function showLogin(error = '') {
  state.events?.close();
  state.events = null;
  $('inbox').hidden = true;
  $('who').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = error;
}

async function signIn(token) {
  const response = await fetch('/api/session', {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' },
    credentials: 'same-origin',
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw data.error ?? { message: `HTTP ${response.status}` };
  return data;
}

function start(session) {
  state.csrf = session.csrf;
  $('user').textContent = session.user;
  $('login').hidden = true;
  $('who').hidden = false;
  $('inbox').hidden = false;
  listen();
  scheduleRefresh(0);
}

/** The event stream: each change refreshes the list. EventSource reconnects by itself. */
function listen() {
  state.events?.close();
  const events = new EventSource('/api/events');
  state.events = events;
  events.addEventListener('open', () => {
    $('live').textContent = '● live';
    $('live').classList.add('on');
  });
  events.addEventListener('error', () => {
    $('live').textContent = '○ reconnecting';
    $('live').classList.remove('on');
  });
  events.addEventListener('runs', (event) => {
    const change = JSON.parse(event.data);
    for (const id of [...change.changed, ...change.removed]) state.details.delete(id);
    scheduleRefresh(100);
  });
}

let timer = null;
function scheduleRefresh(ms) {
  clearTimeout(timer);
  timer = setTimeout(() => void refresh(), ms);
}

function query() {
  const params = new URLSearchParams({ status: state.status });
  if ($('filter-agent').value) params.set('agent', $('filter-agent').value);
  if ($('filter-tool').value.trim()) params.set('tool', $('filter-tool').value.trim());
  const [kind, seconds] = ($('filter-age').value || ':').split(':');
  if (kind === 'max') params.set('maxAge', seconds);
  if (kind === 'min') params.set('minAge', seconds);
  return params.toString();
}

async function refresh() {
  let data;
  try {
    data = await api('GET', `/api/runs?${query()}`);
    $('page-error').textContent = '';
  } catch (error) {
    if (error.status !== 401) $('page-error').textContent = explain(error);
    return;
  }
  state.offset = Date.parse(data.now) - Date.now();
  const list = $('runs');
  const seen = new Set();
  for (const run of data.runs) {
    seen.add(run.runId);
    const key = `${run.version}:${run.decision ? 1 : 0}:${run.status}`;
    const known = state.cards.get(run.runId);
    // A card whose run did not change stays as it is: what the approver typed, and any message.
    const card = known && known.key === key ? known.card : runCard(run, app);
    if (known && known.card !== card) known.card.replaceWith(card);
    state.cards.set(run.runId, { key, card });
    list.append(card); // keeps the server's order (newest first)
  }
  for (const [runId, { card }] of state.cards) {
    if (!seen.has(runId)) {
      card.remove();
      state.cards.delete(runId);
    }
  }
  const agents = new Set([...$('filter-agent').options].map((o) => o.value));
  for (const run of data.runs) {
    if (run.agent && !agents.has(run.agent)) {
      $('filter-agent').append(el('option', { value: run.agent, text: run.agent }));
      agents.add(run.agent);
    }
  }
  const noun = state.status === 'awaiting_approval' ? 'awaiting approval' : state.status.replace('_', ' ');
  // A run whose stored state cannot be read is named, never hidden: an operator looks into it.
  const damaged = data.damaged ?? [];
  const unreadable =
    damaged.length === 0
      ? ''
      : ` ${damaged.length} run${damaged.length === 1 ? '' : 's'} could not be read (${damaged.map((d) => d.runId).join(', ')}): see the server log.`;
  $('summary').textContent =
    (data.total === 0 ? `No runs ${noun}.` : `${data.total} run${data.total === 1 ? '' : 's'} ${noun}, newest first.`) +
    unreadable;
}

function wire() {
  $('login-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      start(await signIn($('token').value.trim()));
      $('token').value = '';
    } catch (error) {
      $('login-error').textContent = `Sign-in refused: ${error.message ?? 'unknown error'}`;
    }
  });
  $('logout').addEventListener('click', async () => {
    await api('DELETE', '/api/session').catch(() => {});
    state.csrf = null;
    showLogin();
  });
  for (const tab of document.querySelectorAll('.tabs button')) {
    tab.addEventListener('click', () => {
      state.status = tab.dataset.status;
      for (const other of document.querySelectorAll('.tabs button'))
        other.setAttribute('aria-pressed', String(other === tab));
      for (const { card } of state.cards.values()) card.remove();
      state.cards.clear();
      scheduleRefresh(0);
    });
  }
  $('filters').addEventListener('change', () => scheduleRefresh(0));
  $('filter-tool').addEventListener('input', () => scheduleRefresh(300));
  $('filters').addEventListener('submit', (event) => event.preventDefault());
  $('refresh').addEventListener('click', () => scheduleRefresh(0));
  setInterval(() => tick(now()), 1000);
}

async function boot() {
  wire();
  // A link may carry the token in its fragment (never sent to a server): sign in with it, then
  // drop it from the address bar and the history.
  const fromLink = new URLSearchParams(location.hash.slice(1)).get('token');
  if (fromLink) {
    history.replaceState(null, '', location.pathname + location.search);
    try {
      return start(await signIn(fromLink));
    } catch (error) {
      return showLogin(`Sign-in refused: ${error.message ?? 'unknown error'}`);
    }
  }
  try {
    start(await api('GET', '/api/session'));
  } catch {
    showLogin();
  }
}

void boot();
