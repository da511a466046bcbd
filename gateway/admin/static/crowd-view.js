// The crowd on each layout's live page, on the team page: every aggregated control's value and n,
// its zones, a vote's bars and the cue's phase with its Re-arm button, read a few times a second.
// Every value from the server is set as text, never as HTML.

import { latestReads } from './latest-read.js';

export const CROWD_POLL_MS = 300;

/** The aggregated controls of a layout's live page (the crowd view shows them). */
function crowdControls(layout) {
  return (layout.pages.find((p) => p.pageId === layout.activePageId)?.controls ?? []).filter((c) => c.aggregate);
}

export function createCrowdView({ api, el, say, guarded }) {
  function crowdSection(layout) {
    if (crowdControls(layout).length === 0) return '';
    return el(
      'section',
      { class: 'crowd', 'data-crowd': layout.layoutId, 'aria-labelledby': `crowd-title-${layout.layoutId}` },
      el('h4', { id: `crowd-title-${layout.layoutId}`, text: 'The crowd on the live page' }),
      el('div', { class: 'crowd-controls' }),
    );
  }

  const fmt = (x) => (typeof x === 'number' ? (Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(2)) : '—');

  /** A crowd value for people: one number, x and y, or the votes per option. */
  function valueText(c, value) {
    if (value === null || value === undefined) return 'no one yet';
    if (c.mode === 'centroid') return `x ${fmt(value[0])}, y ${fmt(value[1])}`;
    if (c.mode === 'votes') return value.map((v, i) => `${c.options?.[i] ?? i} ${v}`).join(', ');
    return fmt(Array.isArray(value) ? value[0] : value);
  }

  function cueText(cue) {
    if (!cue) return '';
    const at = (iso) => (iso ? new Date(iso).toLocaleTimeString() : '');
    if (cue.phase === 'holding') return `holding since ${at(cue.holdingSince)}${cue.value === null ? '' : ` (last fired ${cue.value})`}`;
    if (cue.phase === 'fired') return `fired ${cue.value} at ${at(cue.firedAt)}`;
    return 'armed';
  }

  function voteBars(c) {
    const total = (c.value ?? []).reduce((a, b) => a + b, 0);
    return el(
      'ul',
      { class: 'votes' },
      ...(c.value ?? (c.options ?? []).map(() => 0)).map((v, i) => {
        const label = c.options?.[i] ?? String(i);
        const share = total > 0 ? v / total : 0;
        return el('li', {}, el('span', { class: 'vote-label', text: label }), el('meter', { min: '0', max: '1', value: String(share), 'aria-label': `${label}: ${Math.round(share * 100)} %` }), el('span', { class: 'vote-count', text: `${v} (${Math.round(share * 100)} %)` }));
      }),
    );
  }

  function renderCrowdControl(layout, c) {
    const zones = Object.entries(c.zones ?? {});
    return el(
      'article',
      { class: 'crowd-control', 'data-lid': String(c.lid), 'aria-label': `${c.label}, ${c.mode}` },
      el('h5', { text: `${c.label} ` }, el('span', { class: 'muted', text: `(lid ${c.lid}, ${c.mode})` })),
      el('p', {}, 'Value: ', el('strong', { 'data-field': 'value', text: valueText(c, c.value) }), ' · counted: ', el('span', { 'data-field': 'n', text: String(c.n) })),
      c.mode === 'votes' ? voteBars(c) : '',
      zones.length ? el('p', { 'data-field': 'zones' }, 'Zones: ', zones.map(([z, v]) => `${z} ${valueText(c, v.value)} (${v.n})`).join(' · ')) : '',
      c.cue
        ? el(
            'p',
            { class: 'cue' },
            'Cue: ',
            el('span', { 'data-field': 'cue', class: `cue-${c.cue.phase}`, text: cueText(c.cue) }),
            ' ',
            el('button', { type: 'button', class: 'secondary', 'data-rearm': String(c.lid), 'aria-label': `Re-arm the cue of ${c.label}`, onclick: () => rearm(layout, c), text: 'Re-arm' }),
          )
        : '',
    );
  }

  /** Puts a layout's crowd on its section: rebuilt when its controls changed, else only the texts (focus stays). */
  function showCrowd(layout, crowd) {
    const box = document.querySelector(`[data-crowd="${CSS.escape(layout.layoutId)}"] .crowd-controls`);
    if (!box) return;
    const shape = JSON.stringify(crowd.controls.map((c) => [c.lid, c.mode, Object.keys(c.zones ?? {}), !!c.cue, c.value?.length]));
    if (box.dataset.shape !== shape) {
      box.dataset.shape = shape;
      box.replaceChildren(...crowd.controls.map((c) => renderCrowdControl(layout, c)));
      return;
    }
    for (const c of crowd.controls) {
      const card = box.querySelector(`[data-lid="${c.lid}"]`);
      const set = (field, text) => {
        const node = card?.querySelector(`[data-field="${field}"]`);
        if (node && node.textContent !== text) node.textContent = text;
      };
      set('value', valueText(c, c.value));
      set('n', String(c.n));
      const zones = Object.entries(c.zones ?? {});
      if (zones.length) set('zones', `Zones: ${zones.map(([z, v]) => `${z} ${valueText(c, v.value)} (${v.n})`).join(' · ')}`);
      if (c.cue) {
        set('cue', cueText(c.cue));
        const node = card?.querySelector('[data-field="cue"]');
        if (node) node.className = `cue-${c.cue.phase}`;
      }
      if (c.mode === 'votes') card?.querySelector('.votes')?.replaceWith(voteBars(c));
    }
  }

  /** Reads the crowd of every layout whose live page has aggregated controls. */
  async function load(layouts) {
    await Promise.all(layouts.filter((l) => crowdControls(l).length > 0).map(refresh));
  }

  function rearm(layout, c) {
    guarded(async () => {
      await api('POST', `/admin/api/layouts/${encodeURIComponent(layout.layoutId)}/crowd/${c.lid}/rearm`);
      say(`${layout.name}: the cue of “${c.label}” is armed again.`);
      await refresh(layout);
    });
  }

  const latest = latestReads();

  /** Reads a layout's crowd and shows it, unless a read asked for later has been shown already. */
  function refresh(layout) {
    return latest(layout.layoutId, () => api('GET', `/admin/api/layouts/${encodeURIComponent(layout.layoutId)}/crowd`), (crowd) => showCrowd(layout, crowd));
  }

  return { section: crowdSection, load };
}
