// The moderation queue of each layout with a held String control, on the team page: the held
// texts (a listbox: arrows move, A approves, R rejects, M mutes the sender) and the latest
// decisions, read every second so every operator sees the same queue and each other's decisions.
// Every value from the server is set as text, never as HTML.

import { latestReads } from './latest-read.js';

export const MODERATION_POLL_MS = 1000;

/** Whether a layout has a String control in mode hold, on any page. */
export function holdsText(layout) {
  return layout.pages.some((p) => p.controls.some((c) => c.moderation?.mode === 'hold'));
}

const age = (iso, now) => {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  return s < 60 ? `${s} s ago` : `${Math.floor(s / 60)} min ago`;
};
const VERB = { approve: 'approved', reject: 'rejected', mute: 'muted' };

export function createModeration({ api, el, say, guarded }) {
  /** per layout: the items shown and the selected id */
  const views = new Map();

  function section(layout) {
    if (!holdsText(layout)) return '';
    const id = layout.layoutId;
    return el(
      'section',
      { class: 'moderation', 'data-moderation': id, 'aria-labelledby': `mod-title-${id}` },
      el('h4', { id: `mod-title-${id}`, text: 'Moderation queue' }),
      el('p', { class: 'muted', id: `mod-help-${id}`, text: 'Texts waiting for a decision, oldest first. Arrow keys move; A approves (it plays now), R rejects, M mutes the sender for the rest of their token.' }),
      el('ul', { class: 'mod-queue', role: 'listbox', tabindex: '0', 'aria-labelledby': `mod-title-${id}`, 'aria-describedby': `mod-help-${id}`, onkeydown: (ev) => onKey(layout, ev) }),
      el(
        'div',
        { class: 'mod-actions', role: 'group', 'aria-label': `Decide the selected text of ${layout.name}` },
        el('button', { type: 'button', 'data-decide': 'approve', onclick: () => decide(layout, 'approve'), text: 'Approve (A)' }),
        el('button', { type: 'button', class: 'secondary', 'data-decide': 'reject', onclick: () => decide(layout, 'reject'), text: 'Reject (R)' }),
        el('button', { type: 'button', class: 'danger', 'data-decide': 'mute', onclick: () => decide(layout, 'mute'), text: 'Mute sender (M)' }),
      ),
      el('h5', { text: 'Decided' }),
      el('ul', { class: 'mod-decided', 'aria-label': `Latest decisions on ${layout.name}` }),
    );
  }

  function box(layoutId) {
    return document.querySelector(`[data-moderation="${CSS.escape(layoutId)}"]`);
  }

  function render(layout, data) {
    const root = box(layout.layoutId);
    if (!root) return;
    const view = views.get(layout.layoutId) ?? { items: [], selected: null };
    const oldIndex = view.items.findIndex((i) => i.id === view.selected);
    view.items = data.queue;
    if (!view.items.some((i) => i.id === view.selected)) view.selected = view.items[Math.min(Math.max(oldIndex, 0), view.items.length - 1)]?.id ?? null;
    views.set(layout.layoutId, view);
    const now = Date.parse(data.at);
    const list = root.querySelector('.mod-queue');
    const shape = JSON.stringify([view.items.map((i) => i.id), view.selected]);
    if (list.dataset.shape !== shape) {
      list.dataset.shape = shape;
      list.replaceChildren(
        ...(view.items.length
          ? view.items.map((i) =>
              el(
                'li',
                { role: 'option', id: `mod-${layout.layoutId}-${i.id}`, 'data-item': i.id, 'aria-selected': String(i.id === view.selected), onclick: () => select(layout, i.id) },
                el('span', { class: 'mod-text', text: i.text }),
                el('span', { class: 'muted', 'data-field': 'meta', text: ` ${i.label} · ${i.sub} · ${age(i.heldAt, now)}` }),
              ),
            )
          : [el('li', { role: 'option', 'aria-selected': 'false', 'aria-disabled': 'true', class: 'muted', text: 'Nothing waiting.' })]),
      );
    } else {
      for (const i of view.items) {
        const meta = list.querySelector(`[data-item="${CSS.escape(i.id)}"] [data-field="meta"]`);
        const text = ` ${i.label} · ${i.sub} · ${age(i.heldAt, now)}`;
        if (meta && meta.textContent !== text) meta.textContent = text;
      }
    }
    if (view.selected) list.setAttribute('aria-activedescendant', `mod-${layout.layoutId}-${view.selected}`);
    else list.removeAttribute('aria-activedescendant');
    for (const b of root.querySelectorAll('[data-decide]')) b.disabled = view.selected === null;
    const decided = root.querySelector('.mod-decided');
    const dshape = JSON.stringify(data.decided.slice(0, 10).map((d) => d.id + d.decision));
    if (decided.dataset.shape !== dshape) {
      decided.dataset.shape = dshape;
      decided.replaceChildren(
        ...data.decided.slice(0, 10).map((d) => el('li', { 'data-decided': d.id }, el('strong', { text: VERB[d.decision] }), ` “${d.text}” by ${d.by} at ${new Date(d.at).toLocaleTimeString()}`)),
      );
    }
  }

  function select(layout, id) {
    const view = views.get(layout.layoutId);
    if (!view) return;
    view.selected = id;
    box(layout.layoutId)?.querySelector('.mod-queue')?.removeAttribute('data-shape');
    void refresh(layout);
  }

  function onKey(layout, ev) {
    const view = views.get(layout.layoutId);
    if (!view || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const at = view.items.findIndex((i) => i.id === view.selected);
    const move = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: view.items.length - 1 }[ev.key];
    if (move !== undefined) {
      ev.preventDefault();
      const next = view.items[Math.min(Math.max(move, 0), view.items.length - 1)];
      if (next) select(layout, next.id);
      return;
    }
    const decision = { a: 'approve', r: 'reject', m: 'mute' }[ev.key.toLowerCase()];
    if (decision) {
      ev.preventDefault();
      decide(layout, decision);
    }
  }

  function decide(layout, decision) {
    const view = views.get(layout.layoutId);
    const item = view?.items.find((i) => i.id === view.selected);
    if (!item) return;
    guarded(async () => {
      const r = await api('POST', `/admin/api/layouts/${encodeURIComponent(layout.layoutId)}/moderation/${encodeURIComponent(item.id)}/${decision}`);
      say(r.first ? `“${item.text}” ${VERB[decision]}.` : `“${item.text}” was already ${VERB[r.decision]} by ${r.by}.`);
      await refresh(layout);
    });
  }

  const latest = latestReads();

  /** Reads the queue and shows it, unless a read asked for later has been shown already. */
  function refresh(layout) {
    return latest(layout.layoutId, () => api('GET', `/admin/api/layouts/${encodeURIComponent(layout.layoutId)}/moderation`), (data) => render(layout, data));
  }

  /** Reads the queue of every layout that holds texts. */
  async function load(layouts) {
    await Promise.all(layouts.filter(holdsText).map(refresh));
  }

  return { section, load };
}
