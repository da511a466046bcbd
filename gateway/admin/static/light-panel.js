// The light of each layout with a light canvas, on the team page: a panel that plays a look on a
// zone (or every zone) as audiencectl light does, and the phones' sync per zone ("left: 95 % of
// phones within 8 ms"), read every few seconds from every gateway process's figures.
// Every value from the server is set as text, never as HTML.

import { latestReads } from './latest-read.js';

export const SYNC_POLL_MS = 5000;

/** "95 % of phones within 8 ms", or what is known short of it. */
export function syncText(z) {
  const phones = z.phones === 1 ? '1 phone' : `${z.phones} phones`;
  if (z.p95Ms === null) return `${z.zone}: ${phones} reporting, 95 % not within 1 s`;
  return `${z.zone}: 95 % of phones within ${z.p95Ms} ms, half within ${z.p50Ms} ms (${phones})`;
}

export function createLightPanel({ api, el, say, guarded }) {
  function section(layout) {
    if (!layout.light) return '';
    const id = layout.layoutId;
    const field = (label, input) => el('label', { class: 'light-field' }, `${label} `, input);
    const zones = ['*', ...layout.light.zones];
    const form = el(
      'form',
      { class: 'light-form', 'aria-label': `Play a look on ${layout.name}`, onsubmit: (ev) => (ev.preventDefault(), play(layout, form, false)) },
      field('Zone', el('select', { name: 'zone' }, ...zones.map((z) => el('option', { value: z, text: z === '*' ? 'every zone (*)' : z })))),
      field('Colour', el('input', { type: 'color', name: 'color', value: '#ffffff' })),
      field('Brightness', el('input', { type: 'range', name: 'brightness', min: '0', max: '1', step: '0.05', value: '1' })),
      field('Fade (ms)', el('input', { type: 'number', name: 'fadeMs', min: '0', max: '60000', step: '50', value: '0' })),
      field('Pattern', el('select', { name: 'pattern' }, el('option', { value: '', text: 'steady' }), el('option', { value: 'wave', text: 'wave (left to right)' }), el('option', { value: 'strobe', text: 'strobe (2 Hz)' }))),
      el('button', { type: 'submit', 'data-light-play': id, text: 'Play' }),
      el('button', { type: 'button', class: 'secondary', 'data-light-off': id, onclick: () => play(layout, form, true), text: 'Off (controls again)' }),
    );
    return el(
      'section',
      { class: 'light', 'data-light': id, 'aria-labelledby': `light-title-${id}` },
      el('h4', { id: `light-title-${id}`, text: 'Light' }),
      form,
      el('h5', { text: 'Sync' }),
      el('ul', { class: 'light-sync', 'data-sync': id, 'aria-label': `How closely the phones of ${layout.name} are synced` }, el('li', { class: 'muted', text: 'No phone has reported yet.' })),
    );
  }

  function play(layout, form, off) {
    const f = new FormData(form);
    const zone = String(f.get('zone'));
    const pattern = { wave: { type: 'wave', direction: 0, speed: 0.5 }, strobe: { type: 'strobe', hz: 2 } }[String(f.get('pattern'))];
    const look = off ? { zone, off: true } : { zone, color: String(f.get('color')), brightness: Number(f.get('brightness')), fadeMs: Number(f.get('fadeMs')), ...(pattern && { pattern }) };
    guarded(async () => {
      const r = await api('POST', `/admin/api/layouts/${encodeURIComponent(layout.layoutId)}/light`, look);
      say(off ? `Zone ${zone} of ${layout.name} leaves light mode at ${new Date(r.at).toLocaleTimeString()}.` : `Playing ${look.color} on zone ${zone} of ${layout.name} from ${new Date(r.at).toLocaleTimeString()}.`);
    });
  }

  function render(layout, data) {
    const list = document.querySelector(`[data-sync="${CSS.escape(layout.layoutId)}"]`);
    if (!list) return;
    const lines = data.zones.length ? data.zones.map(syncText) : ['No phone has reported yet.'];
    if (list.dataset.shape === JSON.stringify(lines)) return;
    list.dataset.shape = JSON.stringify(lines);
    list.replaceChildren(...lines.map((t) => el('li', { text: t })));
  }

  const latest = latestReads();

  /** Reads the sync figures of every layout with a canvas. */
  async function load(layouts) {
    await Promise.all(layouts.filter((l) => l.light).map((l) => latest(l.layoutId, () => api('GET', `/admin/api/layouts/${encodeURIComponent(l.layoutId)}/sync`), (data) => render(l, data))));
  }

  return { section, load };
}
