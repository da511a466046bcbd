// A layout's crowd cues in the bridge. Every CUE_STEP_MS the cue machine of each aggregated control
// with a cue (schemas/crowd-cue.ts) reads the control's merged crowd value; a firing is recorded in
// the layout's cue hash in Redis by a Redis function (ac_fire_cue_1, schemas/bridge-functions.lua), and in its show record
// with the crowd at that moment, before it is sent as
// `<address>/cue ,i <value>`. The hash is the latch: a bridge that restarts takes the firings of the
// current arm from it and fires none of them again; two bridges on one layout record one firing and
// both send it (the second when its own machine decides, or when it reads the hash, within
// CUE_POLL_MS). A page switch (gen:page) or `audiencectl crowd rearm` (gen:<lid>) starts a new arm;
// only the cues of the live page's controls fire (`live`, written by the page switch and the import).
import { CueMachine, cueArm, cueProblem, cueRecord, type CuePhase, type FiredRecord, type PhaseRecord } from '../schemas/crowd-cue.js';
import type { CrowdValue } from '../schemas/crowd-merge.js';
import { cueStateKey, showRecordKey, showRecordStateKey } from '../schemas/redis-keys.js';
import { RECORD_DEFAULTS } from '../schemas/show-record.js';
import { callBridgeFunction } from './functions.js';
import type { Logger } from '../runtime/log.js';
import type { RedisClient } from '../runtime/redis.js';

/** How often the machines read the crowd values. */
export const CUE_STEP_MS = 20;
/** How often the cue hash is read (re-arms, other bridges' firings) and each cue's phase written for the team page. */
export const CUE_POLL_MS = 250;
/** Another bridge's firing read from the hash is sent here too if it is at most this old (and this bridge was running then). */
const LATE_SEND_MS = 2000;

interface Cue {
  lid: number;
  address: string;
  machine: CueMachine;
  /** the arm the machine is in ('' until the hash was read) */
  arm: string;
  /** firings in this arm that this bridge knows of */
  seq: number;
  /** a firing on its way to Redis */
  firing: boolean;
  /** the phase last written to the hash */
  written: string;
}

export interface CueSink {
  /** sends the cue to every target of the layout (`<address>/cue ,i value`, or as a target's routes say) */
  sendCue(lid: number, address: string, value: number): void;
  /** the layout's merged crowd values now */
  crowdValues(): CrowdValue[];
}

export class LayoutCues {
  private readonly cues = new Map<number, Cue>();
  private hash: Record<string, string> | null = null;
  /** when the hash was last read */
  private hashAt = -Infinity;
  private readonly key: string;
  private readonly record: { stream: string; state: string };
  private readonly startedAt: number;
  private stepTimer: NodeJS.Timeout | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private polling = false;
  private lastErrorLog = 0;
  /** cues fired by this bridge, by lid (a metric) */
  readonly firedCount = new Map<number, number>();

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    private readonly layoutId: string,
    private readonly bridgeId: string,
    private readonly sink: CueSink,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.key = cueStateKey(prefix, layoutId);
    this.record = { stream: showRecordKey(prefix, layoutId), state: showRecordStateKey(prefix, layoutId) };
    this.startedAt = now();
  }

  start(): void {
    this.stepTimer = setInterval(() => this.step(), CUE_STEP_MS);
    this.pollTimer = setInterval(() => void this.poll(), CUE_POLL_MS);
  }

  stop(): void {
    clearInterval(this.stepTimer ?? undefined);
    clearInterval(this.pollTimer ?? undefined);
  }

  /** Each cue's phase now, for the metrics. */
  phases(): { lid: number; phase: CuePhase; output: number | null }[] {
    return [...this.cues.values()].map((c) => ({ lid: c.lid, phase: c.machine.phase, output: c.machine.output }));
  }

  /**
   * One look at every crowd value with a cue. Nothing is decided on a hash older than two reads (a
   * restart, a re-arm or another bridge's firing must be known first): it is read, and the look
   * waits for it.
   */
  step(): void {
    const now = this.now();
    if (this.hash === null || now - this.hashAt > 2 * CUE_POLL_MS) {
      if (this.sink.crowdValues().some((v) => v.cue)) void this.poll();
      return;
    }
    // only the cues of controls on the live page fire (a layout imported before cues existed: all)
    const live = this.hash.live === undefined ? null : new Set(this.hash.live.split(',').filter(Boolean).map(Number));
    for (const v of this.sink.crowdValues()) {
      // a cue the importer would refuse (a summary not written by a gateway) is no cue
      if (!v.cue || cueProblem(v.mode, v.cue) !== null) {
        this.cues.delete(v.lid);
        continue;
      }
      let cue = this.cues.get(v.lid);
      if (!cue || cue.machine.mode !== v.mode) {
        cue = { lid: v.lid, address: v.address, machine: new CueMachine(v.mode, v.cue), arm: '', seq: 0, firing: false, written: '' };
        this.cues.set(v.lid, cue);
        this.sync(cue, now, false);
      }
      cue.machine.settings = v.cue;
      cue.address = v.address;
      if (cue.firing || cue.arm === '' || (live && !live.has(v.lid))) continue;
      const before = { output: cue.machine.output, at: cue.machine.firedAt };
      const value = cue.machine.step(v, now);
      if (value !== null) void this.fire(cue, value, now, before, v);
    }
  }

  /** Records a firing in Redis (and in the show record, with `crowd`), then sends it (or the firing another bridge recorded first). */
  private async fire(cue: Cue, value: number, at: number, before: { output: number | null; at: number | null }, crowd: CrowdValue): Promise<void> {
    cue.firing = true;
    const arm = cue.arm;
    try {
      const [result, text] = (await callBridgeFunction(
        this.redis, 'fireCue', [this.key, this.record.stream, this.record.state],
        [cue.lid, arm, cue.seq, value, at, this.bridgeId, JSON.stringify(crowd.value), crowd.n, RECORD_DEFAULTS.retentionMs, RECORD_DEFAULTS.maxBytes],
      )) as [number, string];
      if (result === 0) {
        cue.arm = ''; // re-armed meanwhile: the next read of the hash starts the new arm
        cue.machine.reset();
      } else this.adopt(cue, JSON.parse(text) as FiredRecord, true);
    } catch (e) {
      // Redis away: the firing is not recorded, so it is not sent; the machine holds again and retries
      if (before.output === null) cue.machine.reset();
      else cue.machine.fired(before.output, before.at ?? at);
      this.logError('could not record a crowd cue; it is decided again once Redis answers', e);
    } finally {
      cue.firing = false;
    }
  }

  /** Takes a recorded firing; sends it if `send` and it is newer than what this bridge knew. */
  private adopt(cue: Cue, f: FiredRecord, send: boolean): void {
    if (f.seq <= cue.seq) return;
    cue.seq = f.seq;
    cue.machine.fired(f.value, f.at);
    if (!send) return;
    this.sink.sendCue(cue.lid, cue.address, f.value);
    this.firedCount.set(cue.lid, (this.firedCount.get(cue.lid) ?? 0) + 1);
    this.log.info({ layoutId: this.layoutId, lid: cue.lid, value: f.value, by: f.by, arm: f.arm }, 'crowd cue fired');
  }

  /** Brings one cue in step with the hash: a new arm re-arms it; a firing it did not know of is taken (and sent, if recent). */
  private sync(cue: Cue, now: number, sendLate: boolean): void {
    const h = this.hash;
    if (!h || cue.firing) return;
    const arm = cueArm(h, cue.lid);
    const fired = cueRecord<FiredRecord>(h, `fired:${cue.lid}`);
    const mine = fired && fired.arm === arm ? fired : null;
    if (cue.arm !== arm) {
      const first = cue.arm === '';
      cue.arm = arm;
      cue.seq = 0;
      cue.machine.reset();
      if (mine) this.adopt(cue, mine, false); // what already fired in this arm (a restart, or another bridge) is not fired again
      if (!first) this.log.info({ layoutId: this.layoutId, lid: cue.lid, arm }, 'crowd cue re-armed');
      return;
    }
    if (mine) this.adopt(cue, mine, sendLate && mine.at >= this.startedAt && now - mine.at <= LATE_SEND_MS);
  }

  /**
   * Reads the hash (re-arms, other bridges' firings) and writes each cue's phase where it changed;
   * a layout none of whose crowd values has a cue costs Redis nothing.
   */
  async poll(): Promise<void> {
    if (this.polling || !this.sink.crowdValues().some((v) => v.cue)) return;
    this.polling = true;
    try {
      const read = this.now();
      this.hash = await this.redis.hgetall(this.key);
      this.hashAt = read;
      const now = this.now();
      const writes: string[] = [];
      for (const cue of this.cues.values()) {
        this.sync(cue, now, true);
        const phase = cue.machine.phase;
        const since = phase === 'holding' ? cue.machine.holdingFrom : null;
        const said = `${cue.arm} ${phase} ${since}`;
        // written when it changed, and at every read while holding (the team page takes an old "holding" for gone)
        if (said !== cue.written || phase === 'holding') {
          cue.written = said;
          const record: PhaseRecord = { arm: cue.arm, phase, since, at: now, by: this.bridgeId };
          writes.push(`phase:${cue.lid}`, JSON.stringify(record));
        }
      }
      if (writes.length > 0) await this.redis.hset(this.key, ...writes);
    } catch (e) {
      this.logError('could not read the crowd cues', e);
    } finally {
      this.polling = false;
    }
  }

  private logError(what: string, e: unknown): void {
    const now = this.now();
    if (now - this.lastErrorLog < 5000) return;
    this.lastErrorLog = now;
    this.log.warn({ layoutId: this.layoutId, err: (e as Error).message }, what);
  }
}
