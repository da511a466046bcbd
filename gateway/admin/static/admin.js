// The team management page. Plain DOM, no framework, no inline code (the CSP forbids it); every
// value from the server is set as text, never as HTML.
import { CROWD_POLL_MS, createCrowdView } from './crowd-view.js';
import { MODERATION_POLL_MS, createModeration } from './moderation.js';
import { SYNC_POLL_MS, createLightPanel } from './light-panel.js';
const $ = (id) => document.getElementById(id);
const state = { csrf: null, layouts: [], pendingRevoke: null, poll: null, signedOut: false };

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, body) {
  const headers = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (state.csrf) headers['x-csrf-token'] = state.csrf;
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin' });
  const data = await res.json().catch(() => null);
  if (!res.ok) throw new ApiError(res.status, data?.error?.code ?? 'error', data?.error?.message ?? res.statusText);
  return data;
}

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'text') node.textContent = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  node.append(...children);
  return node;
}

const when = (ms) => (ms ? new Date(ms).toLocaleString() : '—');
const say = (text) => ($('status').textContent = text);

function show(signedIn) {
  $('signin').hidden = signedIn;
  $('app').hidden = !signedIn;
  $('who').hidden = !signedIn;
}

async function onExpired(e) {
  if (e instanceof ApiError && e.status === 401) {
    // a request in flight across a sign-out is answered 401: the person signed out, nothing expired
    if (state.signedOut) return true;
    state.csrf = null;
    clearInterval(state.poll);
    clearInterval(state.crowdPoll);
    clearInterval(state.moderationPoll);
    clearInterval(state.syncPoll);
    document.cookie = 'ac_signed_in=; Path=/; Max-Age=0; SameSite=Strict';
    show(false);
    say('Your session has ended. Please sign in again.');
    $('email').focus();
    return true;
  }
  return false;
}

async function guarded(action) {
  try {
    await action();
  } catch (e) {
    if (!(await onExpired(e))) say(`Error: ${e.message}`);
  }
}

const crowd = createCrowdView({ api, el, say, guarded });
const moderation = createModeration({ api, el, say, guarded });
const lightPanel = createLightPanel({ api, el, say, guarded });

// --- keys ------------------------------------------------------------------------------------

function scopeText(scope) {
  return scope.kind === 'team' ? 'All team layouts' : scope.layouts.join(', ');
}

async function loadKeys() {
  const { keys } = await api('GET', '/admin/api/keys');
  const rows = keys
    .slice()
    .reverse()
    .map((k) => {
      const revoked = k.revokedAt !== null;
      const cell = (label, ...content) => el('td', { 'data-label': label }, ...content);
      return el(
        'tr',
        { 'data-key-id': k.keyId },
        cell('Name', k.name),
        cell('Key id', el('code', { class: 'key-id', text: k.keyId })),
        cell('Scope', scopeText(k.scope)),
        cell('Created', when(k.createdAt)),
        cell('Last used', when(k.lastUsedAt)),
        cell('Status', el('span', { class: `badge ${revoked ? 'revoked' : 'active'}`, text: revoked ? `revoked ${when(k.revokedAt)}` : 'active' })),
        cell('Actions', revoked ? '' : el('button', { type: 'button', class: 'danger', 'aria-label': `Revoke key ${k.name} (${k.keyId})`, onclick: () => askRevoke(k), text: 'Revoke' })),
      );
    });
  $('keys').tBodies[0].replaceChildren(...(rows.length ? rows : [el('tr', {}, el('td', { colspan: '7', text: 'No keys yet.' }))]));
}

function askRevoke(key) {
  state.pendingRevoke = key;
  $('revoke-key').textContent = `${key.name} (${key.keyId})`;
  $('revoke-dialog').showModal();
}

$('revoke-dialog').addEventListener('close', () =>
  guarded(async () => {
    const key = state.pendingRevoke;
    state.pendingRevoke = null;
    if ($('revoke-dialog').returnValue !== 'revoke' || !key) return;
    await api('POST', `/admin/api/keys/${encodeURIComponent(key.keyId)}/revoke`);
    say(`Key ${key.keyId} revoked.`);
    await loadKeys();
  }),
);

$('new-key').addEventListener('submit', (ev) => {
  ev.preventDefault();
  $('new-key-error').textContent = '';
  guarded(async () => {
    const form = new FormData($('new-key'));
    const body = { name: String(form.get('name') ?? '').trim() };
    for (const field of ['mintRate', 'mintBurst']) {
      const text = String(form.get(field) ?? '').trim();
      if (text !== '') body[field] = Number(text);
    }
    if (form.get('scope') === 'layouts') {
      body.layouts = form.getAll('layout').map(String);
      if (body.layouts.length === 0) {
        $('new-key-error').textContent = 'Choose at least one layout, or give the key all of the team’s layouts.';
        return;
      }
    }
    try {
      const created = await api('POST', '/admin/api/keys', body);
      $('secret-value').value = created.apiKey;
      $('secret').hidden = false;
      $('secret').focus();
      $('new-key').reset();
      await loadKeys();
    } catch (e) {
      if (e instanceof ApiError && e.status !== 401) $('new-key-error').textContent = e.message;
      else throw e;
    }
  });
});

$('copy').addEventListener('click', async () => {
  $('secret-value').select();
  try {
    await navigator.clipboard.writeText($('secret-value').value);
    $('copy-status').textContent = 'Copied to the clipboard.';
  } catch {
    $('copy-status').textContent = 'Selected: press Ctrl+C (or ⌘C) to copy.';
  }
});

$('secret-done').addEventListener('click', () => {
  $('secret-value').value = '';
  $('secret').hidden = true;
  $('copy-status').textContent = '';
  $('key-name').focus();
});

// --- layouts ---------------------------------------------------------------------------------

function renderScopeChoices() {
  const chosen = new Set([...document.querySelectorAll('input[name=layout]:checked')].map((i) => i.value));
  $('scope-layouts').replaceChildren(
    ...state.layouts.map((l) =>
      el('label', { class: 'inline' }, el('input', { type: 'checkbox', name: 'layout', value: l.layoutId, ...(chosen.has(l.layoutId) && { checked: '' }) }), `${l.name} (${l.layoutId})`),
    ),
  );
}

function optionsText(control) {
  return (control.options ?? []).map((o) => `${o.index} ${o.label}`).join(', ');
}

function renderPage(layout, page) {
  const live = page.pageId === layout.activePageId;
  const head = el(
    'div',
    { class: 'page-head' },
    el('div', { class: 'page-title' }, el('h4', { text: page.name }, ' ', el('span', { class: 'muted', text: `(${page.pageId})` })), live ? el('span', { class: 'badge live', text: 'Live now' }) : ''),
    el('button', {
      type: 'button',
      class: live ? '' : 'secondary',
      'aria-pressed': String(live),
      'data-page-id': page.pageId,
      text: live ? `${page.name} (active)` : `Make “${page.name}” active`,
      onclick: () => (live ? undefined : activate(layout, page)),
    }),
  );
  const cell = (label, text) => el('td', { 'data-label': label, text });
  const rows = page.controls.map((c) => el('tr', { 'data-lid': String(c.lid) }, cell('Label', c.label), cell('Type', c.type), cell('Address', c.address), cell('Options', optionsText(c)), cell('Crowd', c.crowd ?? '')));
  const table = el(
    'table',
    { class: 'controls' },
    el('caption', { class: 'visually-hidden', text: `Controls of ${page.name}` }),
    el('thead', {}, el('tr', {}, ...['Label', 'Type', 'Address', 'Options', 'Crowd'].map((h) => el('th', { scope: 'col', text: h })))),
    el('tbody', {}, ...(rows.length ? rows : [el('tr', {}, el('td', { colspan: '5', text: 'No controls on this page.' }))])),
  );
  return el('section', { class: live ? 'page live' : 'page', 'data-page': page.pageId, 'aria-label': `Page ${page.name}${live ? ', live now' : ''}` }, head, el('div', { class: 'table-wrap' }, table));
}

/** "none connected", or "2 of 3 reachable": the bridges' registered displays, and those they can reach. */
function displaysText(l) {
  return l.destinationCount === 0 ? 'none connected' : `${l.displaysReachable} of ${l.destinationCount} reachable`;
}

function renderLayouts() {
  const items = state.layouts.map((l) =>
    el(
      'li',
      { class: 'layout', 'data-layout-id': l.layoutId },
      el('h3', { text: `${l.name} ` }, el('span', { class: 'muted', text: `(${l.layoutId})` })),
      el('p', {}, 'Displays: ', el('span', { class: 'count', 'data-destinations': l.layoutId, text: displaysText(l) })),
      el(
        'p',
        { class: 'end-show' },
        el('button', { type: 'button', class: 'danger', 'data-end-show': l.layoutId, 'aria-label': `End of show: revoke audience tokens of ${l.name}`, onclick: () => askEndShow(l), text: 'End of show: revoke audience tokens' }),
        l.tokensRevokedBefore ? el('span', { class: 'muted', text: ` Tokens minted before ${new Date(l.tokensRevokedBefore).toLocaleString()} are revoked.` }) : '',
      ),
      el(
        'p',
        { class: 'record' },
        'Show record (page switches, cues, moderation, crowd values): ',
        el('a', { href: `/admin/api/layouts/${encodeURIComponent(l.layoutId)}/record?format=csv`, download: '', 'data-record': 'csv', 'aria-label': `Download the show record of ${l.name} as CSV`, text: 'CSV' }),
        ' · ',
        el('a', { href: `/admin/api/layouts/${encodeURIComponent(l.layoutId)}/record?format=json`, download: '', 'data-record': 'json', 'aria-label': `Download the show record of ${l.name} as JSON`, text: 'JSON' }),
      ),
      crowd.section(l),
      moderation.section(l),
      lightPanel.section(l),
      el('div', { class: 'pages', role: 'group', 'aria-label': `Pages of ${l.name}` }, ...l.pages.map((p) => renderPage(l, p))),
    ),
  );
  $('layouts').replaceChildren(...(items.length ? items : [el('li', { text: 'No layouts yet. Import one with audiencectl layout import or PUT /admin/api/layouts/{id}.' })]));
}

async function loadLayouts(full = true) {
  const { layouts } = await api('GET', '/admin/api/layouts');
  const structureChanged = JSON.stringify(layouts.map((l) => [l.layoutId, l.activePageId, l.pages])) !== JSON.stringify(state.layouts.map((l) => [l.layoutId, l.activePageId, l.pages]));
  state.layouts = layouts;
  if (full || structureChanged) {
    renderLayouts();
    renderScopeChoices();
  } else {
    // only the live counts: keep focus and the screen reader's place
    for (const l of layouts) {
      const span = document.querySelector(`[data-destinations="${CSS.escape(l.layoutId)}"]`);
      if (span && span.textContent !== displaysText(l)) span.textContent = displaysText(l);
    }
  }
}

function askEndShow(layout) {
  state.pendingEndShow = layout;
  $('end-show-layout').textContent = `${layout.name} (${layout.layoutId})`;
  $('end-show-dialog').showModal();
}

$('end-show-dialog').addEventListener('close', () =>
  guarded(async () => {
    const layout = state.pendingEndShow;
    state.pendingEndShow = null;
    if ($('end-show-dialog').returnValue !== 'end' || !layout) return;
    const { revokedBefore } = await api('POST', `/admin/api/layouts/${encodeURIComponent(layout.layoutId)}/revoke-tokens`, {});
    say(`${layout.name}: audience tokens minted before ${new Date(revokedBefore).toLocaleString()} are revoked.`);
    await loadLayouts();
  }),
);

function activate(layout, page) {
  guarded(async () => {
    await api('POST', `/admin/api/layouts/${encodeURIComponent(layout.layoutId)}/activate`, { pageId: page.pageId });
    say(`${layout.name}: “${page.name}” is now the active page.`);
    await loadLayouts();
    document.querySelector(`[data-layout-id="${CSS.escape(layout.layoutId)}"] [data-page-id="${CSS.escape(page.pageId)}"]`)?.focus();
  });
}

// --- session ---------------------------------------------------------------------------------

async function enter(session) {
  state.signedOut = false;
  state.csrf = session.csrfToken;
  $('who-text').textContent = `${session.email} · ${session.teamName}`;
  show(true);
  await Promise.all([loadKeys(), loadLayouts()]);
  clearInterval(state.poll);
  state.poll = setInterval(() => {
    if (!document.hidden) guarded(() => loadLayouts(false));
  }, 2000);
  clearInterval(state.crowdPoll);
  state.crowdPoll = setInterval(() => {
    if (!document.hidden && !state.crowdLoading) {
      state.crowdLoading = true;
      guarded(() => crowd.load(state.layouts)).finally(() => (state.crowdLoading = false));
    }
  }, CROWD_POLL_MS);
  await guarded(() => moderation.load(state.layouts));
  clearInterval(state.moderationPoll);
  state.moderationPoll = setInterval(() => {
    if (!document.hidden && !state.moderationLoading) {
      state.moderationLoading = true;
      guarded(() => moderation.load(state.layouts)).finally(() => (state.moderationLoading = false));
    }
  }, MODERATION_POLL_MS);
  await guarded(() => lightPanel.load(state.layouts));
  clearInterval(state.syncPoll);
  state.syncPoll = setInterval(() => {
    if (!document.hidden) guarded(() => lightPanel.load(state.layouts));
  }, SYNC_POLL_MS);
}

$('signin-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  $('signin-error').textContent = '';
  try {
    const session = await api('POST', '/admin/api/login', { email: $('email').value, password: $('password').value });
    $('password').value = '';
    say('');
    await enter(session);
  } catch (e) {
    $('signin-error').textContent = e.message;
  }
});

$('signout').addEventListener('click', () =>
  guarded(async () => {
    clearInterval(state.poll);
    clearInterval(state.crowdPoll);
    clearInterval(state.moderationPoll);
    clearInterval(state.syncPoll);
    state.signedOut = true; // before the request: a poll answered while it is under way is not an expiry either
    await api('POST', '/admin/api/logout').catch((e) => {
      state.signedOut = false;
      throw e;
    });
    state.csrf = null;
    $('secret-value').value = '';
    $('secret').hidden = true;
    show(false);
    say('Signed out.');
  }),
);

// The gateway sets the readable hint cookie ac_signed_in beside the HttpOnly session cookie, so a
// browser that never signed in (or signed out) does not ask, and its console stays clean.
if (!document.cookie.split('; ').includes('ac_signed_in=1')) {
  show(false);
  $('email').focus();
} else {
  try {
    await enter(await api('GET', '/admin/api/session'));
  } catch (e) {
    if (!(await onExpired(e))) {
      say(`Error: ${e.message}`);
      show(false);
      $('email').focus();
    }
  }
}
