// Plays a scenario against a deployment through its public API only: discovers the layout with the
// API key, mints a token per phone (at most mintPerSecond, as a backend would), and plays the
// phases on the plan's clock: arrivals, Poisson play, cues on a page the operator switches to, and
// reconnect storms. Everything it sends goes to the target; every phase is bounded in time.
import { randomBytes } from 'node:crypto';
import { exponentialMs, preferenceSplit, PhoneTaste, seededRandom, type PlayControl } from './crowd-model.js';
import { CrowdCheck, type CheckedControl, type CrowdCheckRow, type CrowdSample } from './crowd-check.js';
import { DisplayWatch } from './display-watch.js';
import { LoadtestError } from './errors.js';
import { Metrics } from './metrics.js';
import { Phone, type LivePage } from './phone.js';
import type { Phase, Scenario } from './scenario.js';
import { Schedule } from './schedule.js';

export interface RunOptions {
  scenario: Scenario;
  target: URL;
  apiKey: string;
  sourceAddresses: readonly string[];
  /** host:port to listen on for the bridge's OSC (the venue end), or null */
  oscListen: string | null;
  /** check the crowd's counts against what arrives there (--display): needs oscListen */
  checkCrowd?: boolean;
  /** a line of progress every second (a terminal), or nothing */
  progress: ((line: string) => void) | null;
  /** aborted by Ctrl-C: the run stops at once and reports what it measured */
  signal: AbortSignal;
}

export interface RunOutcome {
  metrics: Metrics;
  interrupted: boolean;
  durationS: number;
  /** the crowd check's rows (empty without --display) */
  crowd: CrowdCheckRow[];
  /** the count check's samples during the run (empty without --display) */
  crowdSamples: CrowdSample[];
  /** when each lost socket was live again (its new page; ms since the epoch), in order */
  socketsBackAt: number[];
}

/** After the last phase, answers still on their way are waited for this long. */
const SETTLE_MS = 2000;
/** Then the actions sent already and not yet answered (a resend after a lost socket among them) are waited for this long at most. */
const SENT_SETTLE_MS = 10_000;
/** With --osc-listen, datagrams still on their way after the last ack are waited for this long. */
const DISPLAY_SETTLE_MS = 1000;
/** A crowd check that does not match is looked at again this often, this many times: the display's last updates may be on their way. */
const CROWD_RECHECK_MS = 250;
const CROWD_RECHECKS = 4;
/** ... and, while a mismatched control's figure is uncertain (CrowdCheck.unsettledUntil), for this long at most. */
const CROWD_UNSETTLED_MAX_MS = 10_000;
/** How often the count check samples each aggregated control's n during the run (--display). */
const CROWD_SAMPLE_MS = 250;
/** How often the phones' heartbeat (and renewals) are looked at. */
const HEARTBEAT_PASS_MS = 100;
/** Tokens being minted at once at most (a backend's pool of connections). */
const MINTS_IN_FLIGHT = 32;
/** How often the layout is read for the phones that use POST /action (they have no page frames). */
const HTTP_PAGE_POLL_MS = 500;

/** The cue of an onPage phase: who saw the page when, and who acts on it. */
interface Cue {
  phase: Phase;
  seen: Map<Phone, number>;
}

export async function runScenario(o: RunOptions): Promise<RunOutcome> {
  const { scenario } = o;
  const metrics = new Metrics();
  const first = await discover(o.target, o.apiKey, scenario.layoutId);
  const schedule = new Schedule(metrics, scenario.maxLagMs);
  const display = o.oscListen === null ? null : new DisplayWatch(metrics, () => schedule.now());
  await display?.listen(o.oscListen!);
  const check = display && o.checkCrowd ? new CrowdCheck() : null;
  const random = seededRandom(scenario.seed);
  const preference = preferenceSplit(scenario.seed);
  const phones: Phone[] = [];
  const tastes = new Map<Phone, PhoneTaste>();
  let phaseIndex = -1;
  let stopping = false;
  let cue: Cue | null = null;
  let httpPage: LivePage = { pageId: first.activePageId, version: 0, controls: first.controls };
  const socketsBackAt: number[] = [];

  const env = {
    metrics,
    now: () => schedule.now(),
    target: o.target,
    layoutId: scenario.layoutId,
    sourceAddresses: o.sourceAddresses,
    stopping: () => stopping,
    display,
    runId: randomBytes(6).toString('hex'),
    renew: (token: string) => renew(o.target, o.apiKey, scenario.layoutId, token),
    back: (wallAt: number) => socketsBackAt.push(wallAt),
    sent: (phone: Phone, action: { lid: number }) => {
      const control = checkedControl(phone, action.lid);
      if (control && check) check.sent(phone.id, control);
    },
    stored: (phone: Phone, action: { lid: number; value?: unknown }, at: number, sentAt: number) => {
      const control = checkedControl(phone, action.lid);
      if (control && check) check.stored(phone.id, control, action.value, at, sentAt);
    },
    refused: (phone: Phone, action: { lid: number }) => {
      const control = checkedControl(phone, action.lid);
      if (control && check) check.refused(phone.id, control);
    },
    sawPage: (phone: Phone, page: LivePage, at: number, wallAt: number) => {
      if (!cue || page.pageId !== cue.phase.onPage || cue.seen.has(phone)) return;
      // the fan-out: from the switch itself (the frame's changedAt), or from the first phone that saw it
      if (page.changedAt !== undefined) metrics.record('page_switch_ms', Math.max(0, wallAt - page.changedAt));
      onCue(cue, phone, at, page.changedAt === undefined);
    },
  };

  function checkedControl(phone: Phone, lid: number): CheckedControl | undefined {
    return phone.page?.controls.find((c) => c.lid === lid) as CheckedControl | undefined;
  }

  /** A phone saw the cue's page; `fromFirst`: its fan-out counts from the first phone that saw it (no changedAt). */
  function onCue(c: Cue, phone: Phone, at: number, fromFirst: boolean): void {
    c.seen.set(phone, fromFirst ? at : -1);
    if (random() >= c.phase.share) return;
    const when = at + random() * c.phase.actWithinS * 1000;
    schedule.at(when, () => act(phone, when, true));
  }

  function controlsOf(phone: Phone): PlayControl[] {
    return phone.page?.controls ?? [];
  }

  function act(phone: Phone, at: number, vote = false): void {
    if (stopping) return;
    const taste = tastes.get(phone)!;
    const action = taste.act(controlsOf(phone), vote);
    if (!action) return;
    const times = action.type === 'Button' ? taste.burst() : 1;
    for (let i = 0; i < times; i++) phone.act(i === 0 ? action : { ...action }, at);
  }

  /** A phone's Poisson play while its phase has a rate. */
  function play(phone: Phone, phase: number, from: number): void {
    const rate = scenario.phases[phase]?.actionsPerPhonePerS ?? 0;
    if (rate <= 0) return;
    const at = from + exponentialMs(() => random(), rate);
    schedule.at(at, () => {
      if (phaseIndex !== phase || stopping) return;
      act(phone, at);
      play(phone, phase, at);
    });
  }

  // tokens at most mintPerSecond, up to MINTS_IN_FLIGHT at once; arrivals wait in line for theirs
  const waiting: number[] = [];
  let mintsInFlight = 0;
  let nextMintAt = 0;
  let pacer: NodeJS.Timeout | null = null;
  function mintNext(): void {
    if (pacer) return;
    const now = schedule.now();
    while (waiting.length > 0 && !stopping && mintsInFlight < MINTS_IN_FLIGHT && nextMintAt <= now) {
      nextMintAt = Math.max(nextMintAt, now - 1000) + 1000 / scenario.mintPerSecond;
      const intendedAt = waiting.shift()!;
      mintsInFlight++;
      void mint(o.target, o.apiKey, scenario.layoutId).then(
        (token) => {
          mintsInFlight--;
          metrics.count('tokens_minted');
          if (!stopping) arrive(token, intendedAt);
          mintNext();
        },
        (e: unknown) => {
          mintsInFlight--;
          metrics.error(e instanceof MintRefused ? `mint_${e.status}` : 'mint_network');
          mintNext();
        },
      );
    }
    if (waiting.length > 0 && !stopping && mintsInFlight < MINTS_IN_FLIGHT) {
      pacer = setTimeout(() => {
        pacer = null;
        mintNext();
      }, Math.max(1, nextMintAt - now));
    }
  }

  function arrive(token: string, intendedAt: number): void {
    const id = phones.length;
    const transport = random() < scenario.httpShare ? 'http' : 'socket';
    const phone = new Phone(id, transport, token, env);
    phones.push(phone);
    tastes.set(phone, new PhoneTaste(seededRandom((scenario.seed + id * 7919) >>> 0), preference));
    metrics.count('phones');
    if (transport === 'http') phone.page = httpPage;
    phone.connect(intendedAt);
    if (transport === 'http' && cue && httpPage.pageId === cue.phase.onPage) onCue(cue, phone, schedule.now(), false);
    play(phone, phaseIndex, schedule.now());
  }

  function startPhase(i: number, at: number): void {
    phaseIndex = i;
    const p = scenario.phases[i]!;
    finishCue();
    if (p.arrivalsPerS) {
      for (let t = at + exponentialMs(random, p.arrivalsPerS); t < at + p.durationS * 1000; t += exponentialMs(random, p.arrivalsPerS)) {
        const arrival = t;
        schedule.at(arrival, () => {
          waiting.push(arrival);
          mintNext();
        });
      }
    }
    for (const phone of phones) play(phone, i, at);
    if (p.onPage) {
      cue = { phase: p, seen: new Map() };
      for (const phone of phones) if (phone.page?.pageId === p.onPage) onCue(cue, phone, at, false);
    }
    if (p.reconnectWithinS !== undefined) {
      for (const phone of phones) phone.reconnect(p.jitter ? random() * p.reconnectWithinS * 1000 : 0);
    }
  }

  /** The fan-out of a cue that ends, for phones whose frames had no changedAt: from the first phone that saw the switch to each one. */
  function finishCue(): void {
    if (!cue) return;
    const times = [...cue.seen.values()].filter((t) => t >= 0);
    const origin = Math.min(...times);
    for (const t of times) metrics.record('page_switch_ms', t - origin);
    cue = null;
  }

  // phones without sockets learn the page by reading the layout
  const poll = scenario.httpShare > 0 ? setInterval(() => void pollPage(), HTTP_PAGE_POLL_MS) : null;
  async function pollPage(): Promise<void> {
    const layout = await discover(o.target, o.apiKey, scenario.layoutId).catch(() => {
      metrics.error('layout_poll'); // the phones without sockets keep their page until the next read
      return null;
    });
    if (!layout || layout.activePageId === httpPage.pageId) return;
    httpPage = { pageId: layout.activePageId, version: httpPage.version + 1, controls: layout.controls };
    const now = schedule.now();
    for (const phone of phones) {
      if (phone.transport !== 'http') continue;
      phone.page = httpPage;
      // phones without sockets learn the page by reading it: they act on the cue, outside the fan-out
      if (cue && httpPage.pageId === cue.phase.onPage && !cue.seen.has(phone)) onCue(cue, phone, now, false);
    }
  }

  // the phones' heartbeat, and their renewals (renewEveryS): one pass over them every 100 ms
  const renewEveryMs = (scenario.renewEveryS ?? 0) * 1000;
  const renewAt = new Map<Phone, number>();
  const beats = setInterval(() => {
    const now = schedule.now();
    for (const phone of phones) {
      phone.beat(now);
      if (renewEveryMs === 0) continue;
      const due = renewAt.get(phone);
      if (due === undefined) renewAt.set(phone, now + random() * renewEveryMs);
      else if (now >= due) {
        renewAt.set(phone, due + renewEveryMs);
        phone.renew();
      }
    }
  }, HEARTBEAT_PASS_MS);
  const crowdSamples: CrowdSample[] = [];
  const sampler = check && display ? setInterval(() => {
    const samples = check.sample(httpPage.controls as CheckedControl[], schedule.now(), Date.now(), (a) => display.shown(a)?.[0] ?? null);
    for (const s of samples) {
      crowdSamples.push(s);
      if (s.shown === null) continue;
      metrics.count('crowd_samples');
      if (s.shown < s.expected[0] || s.shown > s.expected[1]) metrics.count('crowd_samples_off');
    }
  }, CROWD_SAMPLE_MS) : null;
  const progress = o.progress ? setInterval(() => o.progress!(progressLine(metrics, scenario.phases[phaseIndex]?.name ?? '-', schedule.now())), 1000) : null;
  let at = 0;
  for (const [i, p] of scenario.phases.entries()) {
    const start = at;
    schedule.at(start, () => startPhase(i, start));
    at += p.durationS * 1000;
  }
  const interrupted = await new Promise<boolean>((resolve) => {
    const end = setTimeout(() => resolve(false), at);
    o.signal.addEventListener('abort', () => {
      clearTimeout(end);
      resolve(true);
    });
    if (o.signal.aborted) resolve(true);
  });
  finishCue();
  phaseIndex = scenario.phases.length;
  schedule.stop();
  if (!interrupted) {
    await settle(SETTLE_MS, o.signal, () => phones.some((p) => p.unanswered > 0));
    // what was sent may be stored: its answer, or its resend's, is waited for, so that acks and errors tell what is stored
    for (const phone of phones) phone.windDown();
    await settle(SENT_SETTLE_MS, o.signal, () => phones.some((p) => !p.settled));
  }
  // what was stored reaches the displays a bridge tick and its playout delay later
  if (display && !interrupted) await new Promise((r) => setTimeout(r, DISPLAY_SETTLE_MS));
  if (sampler) clearInterval(sampler);
  const crowd = check && display && !interrupted ? await checkCrowd(check, display, o, () => schedule.now()) : [];
  metrics.count('crowd_checked', crowd.length);
  metrics.count('crowd_mismatch', crowd.filter((r) => !r.match).length);
  display?.finish();
  stopping = true;
  if (poll) clearInterval(poll);
  clearInterval(beats);
  if (pacer) clearTimeout(pacer);
  if (progress) clearInterval(progress);
  for (const phone of phones) {
    if (phone.unanswered > 0) metrics.count('unsent', phone.unanswered);
    phone.end();
  }
  return { metrics, interrupted, durationS: schedule.now() / 1000, crowd, crowdSamples, socketsBackAt };
}

/**
 * The crowd check: the layout's live page read once more, and each aggregated control's expected
 * figure set beside what the display last received; a mismatch is looked at again a few times,
 * as the display's last updates may still be on their way, and while its figure is uncertain.
 */
async function checkCrowd(check: CrowdCheck, display: DisplayWatch, o: RunOptions, now: () => number): Promise<CrowdCheckRow[]> {
  const page = await discover(o.target, o.apiKey, o.scenario.layoutId);
  const controls = page.controls as CheckedControl[];
  const giveUpAt = now() + CROWD_UNSETTLED_MAX_MS;
  const again = (i: number, rows: CrowdCheckRow[]) => {
    const off = rows.filter((r) => !r.match);
    if (off.length === 0) return false;
    if (i < CROWD_RECHECKS) return true;
    const t = now();
    return t < giveUpAt && off.some((r) => check.unsettledUntil(controls.find((c) => c.lid === r.lid)!, t) > t);
  };
  let rows = check.rows(controls, now(), (a) => display.shown(a));
  for (let i = 0; again(i, rows); i++) {
    await new Promise((r) => setTimeout(r, CROWD_RECHECK_MS));
    rows = check.rows(controls, now(), (a) => display.shown(a));
  }
  return rows;
}

/** Waits while `waiting()` holds, at most `ms` (or until aborted). */
async function settle(ms: number, signal: AbortSignal, waiting: () => boolean): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until && !signal.aborted && waiting()) await new Promise((r) => setTimeout(r, 20));
}

interface Discovered {
  activePageId: string;
  controls: PlayControl[];
}

/** GET /layout/{id} with the API key; a refusal is a configuration error (wrong key, layout or target). */
async function discover(target: URL, apiKey: string, layoutId: string): Promise<Discovered> {
  let r: Response;
  try {
    r = await fetch(new URL(`/layout/${encodeURIComponent(layoutId)}`, target), { headers: { 'x-api-key': apiKey } });
  } catch (e) {
    throw new LoadtestError('config', `the target ${target.origin} cannot be reached: ${e instanceof Error ? (e.cause instanceof Error ? e.cause.message : e.message) : String(e)}`);
  }
  const body = (await r.json().catch(() => null)) as (Discovered & { error?: { code?: string } }) | null;
  if (!r.ok || !body) throw new LoadtestError('config', `GET /layout/${layoutId} answered ${r.status}${body?.error?.code ? ` ${body.error.code}` : ''}: check AUDIENCE_API_KEY, the layout and --target`);
  return body;
}

class MintRefused extends Error {
  constructor(readonly status: number) {
    super(`POST /token answered ${status}`);
  }
}

/** The same participant's new token, as the app's backend renews it. */
async function renew(target: URL, apiKey: string, layoutId: string, token: string): Promise<string> {
  const r = await fetch(new URL('/token', target), { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify({ layoutId, renew: token }) });
  const body = (await r.json().catch(() => null)) as { token?: string } | null;
  if (!r.ok || !body?.token) throw new Error(`renew_${r.status}`);
  return body.token;
}

async function mint(target: URL, apiKey: string, layoutId: string): Promise<string> {
  const r = await fetch(new URL('/token', target), { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify({ layoutId }) });
  const body = (await r.json().catch(() => null)) as { token?: string } | null;
  if (!r.ok || !body?.token) throw new MintRefused(r.status);
  return body.token;
}

function progressLine(m: Metrics, phase: string, nowMs: number): string {
  const p99 = m.stat('ack_ms', 'p(99)');
  return `${(nowMs / 1000).toFixed(0).padStart(4)} s  ${phase.padEnd(12)} phones ${m.counts.phones}  actions ${m.counts.actions}  acks ${m.counts.acks}  errors ${m.counts.errors}  ack p99 ${p99 === undefined ? '-' : `${p99} ms`}`;
}
