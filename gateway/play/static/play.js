// The audience page: reads its audience token from the URL fragment (#token=...: a fragment never
// reaches a server or its logs) and takes it out of the address bar at once (history.replaceState),
// so it is left neither in the history nor in a shared screenshot; the tab keeps it in
// sessionStorage for a reload. It opens the live channel with the client library, renders the live
// page's controls, sends what the phone does, follows page switches and shows the crowd's values.
import { CLOSE, LiveClient } from '/play/live-client.js';

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = 'audience-control.token';
const fromLink = new URLSearchParams(location.hash.slice(1)).get('token');
if (fromLink) {
  sessionStorage.setItem(TOKEN_KEY, fromLink);
  history.replaceState(null, '', `${location.pathname}${location.search}`);
}
const token = fromLink ?? sessionStorage.getItem(TOKEN_KEY);
const say = (text) => ($('state').textContent = text);
const problem = (text) => {
  $('problem').textContent = text;
  $('problem').hidden = !text;
};

/** At most one send per `ms` for a control moved continuously; the latest value always goes. */
function throttled(ms, send) {
  let timer = null;
  let latest;
  return (value) => {
    latest = value;
    if (timer) return;
    send(latest);
    timer = setTimeout(() => {
      timer = null;
      if (latest !== value) send(latest);
    }, ms);
  };
}

const round = (x) => Math.round(x * 1000) / 1000;
/** An element with these properties (and attributes, for `role`) and children. */
function el(tag, props = {}, ...children) {
  const { role, ...rest } = props;
  const node = Object.assign(document.createElement(tag), rest);
  if (role) node.setAttribute('role', role);
  for (const c of children) if (c) node.append(c);
  return node;
}

/** One control as a form element, wired to `send`; returns [element, showCrowd]. */
function render(control, send) {
  const label = control.props?.label ?? `${control.type} ${control.lid}`;
  const id = `c${control.lid}`;
  const crowd = el('output', { className: 'crowd', id: `${id}-crowd`, hidden: true });
  const show = (text) => {
    crowd.textContent = text;
    crowd.hidden = false;
  };
  switch (control.type) {
    case 'Button': {
      const b = el('button', { type: 'button', textContent: label });
      b.addEventListener('click', () => send({}));
      return [el('div', { className: 'control' }, b, crowd), (c) => show(`Crowd: ${round(c.value)} presses/s from ${c.n}`)];
    }
    case 'Slider': {
      const input = el('input', { type: 'range', id, min: '0', max: '1', step: '0.01', value: '0.5' });
      const go = throttled(50, (value) => send({ value }));
      input.addEventListener('input', () => go(Number(input.value)));
      return [el('div', { className: 'control' }, el('label', { htmlFor: id, className: 'name', textContent: label }), input, crowd), (c) => show(`Crowd: ${round(c.value)} (${c.n} people)`)];
    }
    case 'Toggle': {
      const input = el('input', { type: 'checkbox', id, role: 'switch' });
      input.addEventListener('change', () => send({ value: input.checked }));
      return [el('div', { className: 'control' }, el('label', { className: 'switch' }, input, el('span', { className: 'name', textContent: label })), crowd), (c) => show(`Crowd: ${Math.round(c.value * 100)} % on (${c.n} people)`)];
    }
    case 'Index': {
      const set = el('fieldset', { className: 'control' }, el('legend', { textContent: label }));
      for (const o of control.options ?? []) {
        const input = el('input', { type: 'radio', name: id, value: String(o.index) });
        input.addEventListener('change', () => send({ value: o.index }));
        set.append(el('label', { className: 'choice' }, input, el('span', { textContent: o.label })));
      }
      set.append(crowd);
      return [set, (c) => show(`Votes: ${(control.options ?? []).map((o) => `${o.label} ${c.value[o.index] ?? 0}`).join(', ')}`)];
    }
    case 'XYPad': {
      const pad = el('div', { className: 'pad', role: 'presentation' });
      const dot = el('div', { className: 'dot', hidden: true });
      const crowdDot = el('div', { className: 'dot crowd-dot', hidden: true });
      pad.append(crowdDot, dot);
      const x = el('input', { type: 'range', id: `${id}-x`, min: '0', max: '1', step: '0.01', value: '0.5' });
      const y = el('input', { type: 'range', id: `${id}-y`, min: '0', max: '1', step: '0.01', value: '0.5' });
      const place = (d, px, py) => {
        d.style.left = `${px * 100}%`;
        d.style.top = `${py * 100}%`;
        d.hidden = false;
      };
      const go = throttled(50, (value) => send({ value }));
      const move = (px, py) => {
        x.value = String(px);
        y.value = String(py);
        place(dot, px, py);
        go([px, py]);
      };
      const fromPointer = (e) => {
        const r = pad.getBoundingClientRect();
        move(round(Math.min(1, Math.max(0, (e.clientX - r.left) / r.width))), round(Math.min(1, Math.max(0, (e.clientY - r.top) / r.height))));
      };
      pad.addEventListener('pointerdown', (e) => {
        fromPointer(e);
        pad.setPointerCapture(e.pointerId); // the drag goes on outside the pad
      });
      pad.addEventListener('pointermove', (e) => e.buttons && fromPointer(e));
      for (const r of [x, y]) r.addEventListener('input', () => move(Number(x.value), Number(y.value)));
      const set = el('fieldset', { className: 'control' }, el('legend', { textContent: label }), pad, el('label', { htmlFor: x.id, textContent: 'Across' }), x, el('label', { htmlFor: y.id, textContent: 'Down' }), y, crowd);
      return [set, (c) => (place(crowdDot, c.value[0], c.value[1]), show(`Crowd: ${round(c.value[0])}, ${round(c.value[1])} (${c.n} people)`))];
    }
    case 'String': {
      const input = el('input', { type: 'text', id, maxLength: 200, autocomplete: 'off' });
      const b = el('button', { type: 'button', textContent: 'Send' });
      const go = () => input.value.trim() && send({ value: input.value.trim() }).then(() => (input.value = ''));
      b.addEventListener('click', go);
      input.addEventListener('keydown', (e) => e.key === 'Enter' && (e.preventDefault(), go()));
      return [el('div', { className: 'control' }, el('label', { htmlFor: id, className: 'name', textContent: label }), input, b), () => {}];
    }
    default:
      return [el('p', { textContent: `${label}: not shown here` }), () => {}];
  }
}

// a new link opened in this tab (another token): start again with it
addEventListener('hashchange', () => location.reload());

if (!token) {
  say('No token');
  problem('Open this page with its link: …/play/#token=<audience token>.');
} else {
  const live = new LiveClient({ url: `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/live`, token });
  const crowdShown = new Map();
  const send = (control) => (extra) =>
    live.send({ lid: control.lid, type: control.type, ...extra }).then(
      () => problem(''),
      (e) => problem(e.code === 'rate_limited' ? 'Slow down a little.' : e.message),
    );
  live.on('state', (s) => say({ connecting: 'Connecting…', open: 'Live', waiting: 'Reconnecting…', unauthorized: 'Ended', stopped: 'Ended' }[s] ?? s));
  live.on('unauthorized', () => problem('This link has ended. Ask for a new one.'));
  live.on('closed', (c) => c.code === CLOSE.layoutGone && problem('The show has ended.'));
  live.on('page', (page) => {
    $('title').textContent = page.activePageId;
    const form = $('controls');
    crowdShown.clear();
    form.replaceChildren();
    for (const control of page.controls) {
      const [node, showCrowd] = render(control, send(control));
      crowdShown.set(control.lid, showCrowd);
      form.append(node);
      const now = live.crowd.get(control.lid);
      if (now) showCrowd(now);
    }
  });
  live.on('crowd', (c) => crowdShown.get(c.lid)?.(c));
}
