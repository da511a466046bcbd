// The audience page: reads its audience token from the URL fragment (#token=...: a fragment never
// reaches a server or its logs) and takes it out of the address bar at once (history.replaceState),
// so it is left neither in the history nor in a shared screenshot; the tab keeps it in
// sessionStorage for a reload. It opens the live channel with the client library, renders the live
// page's controls, sends what the phone does, follows page switches and shows the crowd's values.
// While the show lights the phones it fills the screen with the look (light mode; docs/light.md).
import { CLOSE, FlashGuard, LiveClient, displayedRgb, shownAt } from '/play/live-client.js';

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
const percent = (x) => `${Math.round(x * 100)} %`;
const people = (n) => (n === 1 ? '1 person' : `${n} people`);

/** A crowd value as people read it: a share as a percentage, a slider's figure on its own scale (0 to 100 %), votes with counts. */
function crowdText(control, c) {
  switch (c.mode) {
    case 'fraction':
      return `${percent(c.value)} switched on`;
    case 'rate':
      return `${Math.round(c.value * 10) / 10} presses a second`;
    case 'centroid':
      return `across ${percent(c.value[0])}, down ${percent(c.value[1])}`;
    case 'votes':
      return (control.options ?? []).map((o) => `${o.label} ${c.value[o.index] ?? 0}`).join(', ');
    default:
      return percent(c.value); // mean, median, trimmed mean of a slider
  }
}

/** "Crowd: 62 % switched on · 12 people", and each zone's figure where the layout has zones. */
function crowdLine(control, c) {
  const zones = Object.entries(c.zones ?? {}).map(([z, v]) => `${z}: ${crowdText(control, { ...c, ...v })} (${people(v.n)})`);
  return [`Crowd: ${crowdText(control, c)} · ${people(c.n)}`, ...zones];
}
/** An element with these properties (and attributes, for `role`) and children. */
function el(tag, props = {}, ...children) {
  const { role, ...rest } = props;
  const node = Object.assign(document.createElement(tag), rest);
  if (role) node.setAttribute('role', role);
  for (const c of children) if (c) node.append(c);
  return node;
}

/** This phone's own last vote on each Index control, by lid. */
const myVotes = new Map();

/** The votes of an Index as bars with counts: one <meter> per option. */
function voteBars(control, c) {
  const total = c.value.reduce((a, b) => a + b, 0) || 1;
  return el(
    'div',
    { className: 'bars' },
    ...(control.options ?? []).map((o) => {
      const n = c.value[o.index] ?? 0;
      const id = `c${control.lid}-bar${o.index}`;
      return el('div', { className: 'bar' }, el('label', { htmlFor: id, textContent: `${o.label}: ${n}` }), el('meter', { id, min: 0, max: total, value: n }));
    }),
  );
}

/** One control as a form element, wired to `send`; returns [element, showCrowd]. */
function render(control, send) {
  const label = control.props?.label ?? `${control.type} ${control.lid}`;
  const id = `c${control.lid}`;
  const crowd = el('output', { className: 'crowd', id: `${id}-crowd`, hidden: true });
  /** The crowd's value under the control: its lines, and vote bars for an Index. */
  const show = (c) => {
    const [first, ...zones] = crowdLine(control, c);
    const bars = c.mode === 'votes' ? voteBars(control, c) : null;
    crowd.replaceChildren(el('span', { textContent: first }), ...(bars ? [bars] : []), ...zones.map((z) => el('span', { className: 'zone', textContent: z })));
    crowd.hidden = false;
  };
  switch (control.type) {
    case 'Button': {
      const b = el('button', { type: 'button', textContent: label });
      b.addEventListener('click', () =>
        send({}, `Sent: ${label}`).then((ok) => {
          if (!ok) return;
          b.classList.add('sent');
          setTimeout(() => b.classList.remove('sent'), 600);
        }),
      );
      return [el('div', { className: 'control' }, b, crowd), show];
    }
    case 'Slider': {
      const input = el('input', { type: 'range', id, min: '0', max: '1', step: '0.01', value: '0.5' });
      const go = throttled(50, (value) => send({ value }, `${label}: ${percent(value)}`));
      input.addEventListener('input', () => go(Number(input.value)));
      return [el('div', { className: 'control' }, el('label', { htmlFor: id, className: 'name', textContent: label }), input, crowd), show];
    }
    case 'Toggle': {
      const input = el('input', { type: 'checkbox', id, role: 'switch' });
      input.addEventListener('change', () => send({ value: input.checked }, `${label}: ${input.checked ? 'on' : 'off'}`));
      return [el('div', { className: 'control' }, el('label', { className: 'switch' }, input, el('span', { className: 'name', textContent: label })), crowd), show];
    }
    case 'Index': {
      const set = el('fieldset', { className: 'control' }, el('legend', { textContent: label }));
      const mine = el('p', { className: 'mine', id: `${id}-mine`, hidden: !myVotes.has(control.lid) });
      const showMine = () => {
        const o = (control.options ?? []).find((x) => x.index === myVotes.get(control.lid));
        mine.textContent = o ? `Your vote: ${o.label}` : '';
        mine.hidden = !o;
      };
      showMine();
      for (const o of control.options ?? []) {
        const input = el('input', { type: 'radio', name: id, value: String(o.index), checked: myVotes.get(control.lid) === o.index });
        input.addEventListener('change', () =>
          send({ value: o.index }, `Voted: ${o.label}`).then((ok) => {
            if (!ok) return;
            myVotes.set(control.lid, o.index); // kept across page switches and reconnects
            showMine();
          }),
        );
        set.append(el('label', { className: 'choice' }, input, el('span', { textContent: o.label })));
      }
      set.append(mine, crowd);
      return [set, show];
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
      const go = throttled(50, (value) => send({ value }, `${label}: across ${percent(value[0])}, down ${percent(value[1])}`));
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
      return [set, (c) => (place(crowdDot, c.value[0], c.value[1]), show(c))];
    }
    case 'String': {
      const input = el('input', { type: 'text', id, maxLength: 200, autocomplete: 'off' });
      const b = el('button', { type: 'button', textContent: 'Send' });
      const go = () => {
        const text = input.value.trim();
        if (text) void send({ value: text }, `Sent: “${text}”`).then((ok) => ok && (input.value = ''));
      };
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

/** Why an action was refused, in words (the API's codes: docs/api.md). */
function refusal(e) {
  switch (e.code) {
    case 'rate_limited':
      return `Too fast: wait ${Math.max(1, Math.ceil((e.retryAfterMs ?? 1000) / 1000))} s and try again.`;
    case 'control_not_found':
      return 'That control is no longer on the screen.';
    case 'type_mismatch':
    case 'invalid_value':
      return 'That value was not taken. Try again.';
    case 'timeout':
      return 'No answer in time: your network may be slow. Try again.';
    case 'unauthorized':
      return 'Your access has ended. Ask for a new link.';
    case 'stopped':
      return 'The show has ended.';
    default:
      return `Not sent (${e.code}).`;
  }
}

/** What the state line says while the page is not live, from the close that took it off (`code`). */
function notLive(live, code) {
  if (live.state === 'stopped') return code === CLOSE.replaced ? 'Open in another tab or app: this one has stopped.' : 'The show has ended.';
  if (live.state === 'unauthorized') return 'Your access has ended. Ask for a new link.';
  if (live.state === 'offline') return 'Offline: this phone has no network. It reconnects when it is back.';
  if (live.state === 'connecting') return 'Connecting…';
  if (code === CLOSE.tooSlow) return 'Too slow to keep up: reconnecting.';
  if (code === CLOSE.serviceRestart || code === CLOSE.goingAway) return "The show's server is restarting: reconnecting.";
  return 'No network: retrying.';
}

/** When the next attempt is, counted down (outside the announced state line: it changes every second). */
function nextAttempt(live) {
  if (live.state !== 'waiting' || live.nextAttemptAt === null) return '';
  const seconds = Math.ceil((live.nextAttemptAt - Date.now()) / 1000);
  return seconds > 0 ? `Next try in ${seconds} s` : 'Trying now';
}

/**
 * Light mode: each look shows from its `at` on the phone's estimate of the server's clock, placed by
 * the phone's seat, through a flash guard (never more than 3 flashes a second; with reduced motion,
 * steady colours that only fade); the screen is kept awake while lit; an `off` look, or the end of
 * the show, hands the screen back to the controls. `window.audienceLight` keeps what was rendered
 * when (server time), for measuring a show's sync.
 */
function lightMode(live) {
  const overlay = $('light');
  const reduced = matchMedia('(prefers-reduced-motion: reduce)');
  let guard = new FlashGuard(reduced.matches);
  reduced.addEventListener('change', () => (guard = new FlashGuard(reduced.matches)));
  const log = { rendered: [], clamped: 0, lit: false, wakeLock: navigator.wakeLock ? 'released' : 'unsupported', clockUncertaintyMs: () => live.clockUncertaintyMs() };
  window.audienceLight = log;
  /** looks waiting for their `at`, in order; the one showing; what showed when it started */
  const queue = [];
  let current = null;
  let before = null;
  let lock = null;
  let frame = 0;
  const wake = () => {
    if (!navigator.wakeLock || lock || document.visibilityState !== 'visible') return;
    navigator.wakeLock.request('screen').then((l) => {
      lock = l;
      log.wakeLock = 'held';
      l.addEventListener('release', () => ((lock = null), (log.wakeLock = 'released')));
    }, () => (log.wakeLock = 'refused'));
  };
  document.addEventListener('visibilitychange', () => log.lit && wake());
  const light = (on) => {
    if (log.lit === on) return;
    log.lit = on;
    overlay.hidden = !on;
    document.body.classList.toggle('lit', on);
    if (on) wake();
    else void lock?.release().catch(() => {});
  };
  let timer = 0;
  /** Starts the looks that are due, shows what the screen shows now, and plans the next step. */
  const step = () => {
    const now = live.serverNow();
    while (queue.length > 0 && queue[0].at <= now) {
      const next = queue.shift();
      before = current ? shownAt(current, before, live.seat, next.at, guard.reducedMotion) : null;
      current = next;
      log.rendered.push({ id: next.id, at: now, color: next.color });
      if (log.rendered.length > 1000) log.rendered.shift();
    }
    const shown = guard.show(current ? shownAt(current, before, live.seat, now, guard.reducedMotion) : null, performance.now());
    log.clamped = guard.clamped;
    light(current !== null && !current.off);
    const [r, g, b] = displayedRgb(shown);
    overlay.style.backgroundColor = `rgb(${r}, ${g}, ${b})`;
    plan();
  };
  /** Whether the screen changes by itself now: a pattern, a fade under way, or the guard easing toward the look. */
  const moving = (now) => current !== null && !current.off && (current.pattern !== undefined || now < current.at + (current.fadeMs ?? 0) || guard.easing);
  /**
   * A look starts on a timer set for its at (a frame's start is not rounded to the next animation
   * frame); while the screen moves, every animation frame draws, and a steady look is drawn once.
   */
  const plan = () => {
    clearTimeout(timer);
    if (queue.length > 0) timer = setTimeout(step, Math.max(0, queue[0].at - live.serverNow()));
    if (moving(live.serverNow()) && !frame) frame = requestAnimationFrame(() => ((frame = 0), step()));
  };
  live.on('light', (look) => {
    if (current?.id === look.id || queue.some((q) => q.id === look.id)) return; // sent again after a reconnect
    queue.push(look);
    queue.sort((a, b) => a.at - b.at);
    plan();
  });
  live.on('state', (state) => {
    if (state !== 'stopped' && state !== 'unauthorized') return;
    queue.length = 0;
    current = null;
    step();
  });
}

if (!token) {
  say('No token');
  problem('Open this page with its link: …/play/#token=<audience token>.');
} else {
  const live = new LiveClient({ url: `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/live`, token });
  lightMode(live);
  const crowdShown = new Map();
  /** Sends; says what was sent (announced), or why it was refused; resolves with whether it was taken. */
  const send = (control) => (extra, what) =>
    live.send({ lid: control.lid, type: control.type, ...extra }).then(
      () => {
        problem('');
        $('feedback').textContent = `✓ ${what}`;
        return true;
      },
      (e) => {
        $('feedback').textContent = '';
        problem(refusal(e));
        return false;
      },
    );
  /** The state line: "Live", or what is wrong; beside it when the next attempt is. */
  /** The close that took the page off live: a failed reconnect after it (1006, no socket) does not replace it. */
  let offBy = null;
  live.on('closed', (c) => (offBy === null || c.code !== 1006 ? (offBy = c.code) : undefined));
  const showState = () => {
    if (live.state === 'open') offBy = null;
    say(live.state === 'open' ? 'Live' : notLive(live, offBy));
    $('next').textContent = nextAttempt(live);
    document.body.classList.toggle('offline', live.state !== 'open');
  };
  live.on('state', showState);
  live.on('waiting', showState);
  setInterval(() => ($('next').textContent = nextAttempt(live)), 1000);
  /** the page on screen: its id and controls (a page frame of the same page leaves them, and what is typed, as they are) */
  let onScreen = '';
  live.on('page', (page) => {
    $('title').textContent = page.pageName ?? page.activePageId;
    const form = $('controls');
    form.dataset.version = String(page.version);
    const shown = JSON.stringify([page.activePageId, page.controls]);
    if (shown === onScreen) return;
    onScreen = shown;
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
