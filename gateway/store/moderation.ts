// The moderation queues in Redis: each layout's held texts, the decisions made on them, and its
// muted participants, all under the layout's hash tag. Holding and deciding are one Lua call each,
// so every bound holds and every item is decided once however many gateways and operators act;
// listing is one too, so the moderators' view is one moment of the queue.
import { PARTICIPANT_MEMORY_MS } from './layouts.js';
import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../../runtime/redis.js';
import { ACTION_FIELD } from '../../schemas/action-entry.js';
import { AppError } from '../errors.js';
import type { RedisKeys } from './keys.js';
import { publishInvalidation } from './invalidation.js';
import { runScript } from './scripts.js';
import type { RecordBounds } from './show-record.js';

/** A text waiting for a moderator. */
export interface HeldItem {
  id: string;
  layoutId: string;
  sub: string;
  lid: number;
  address: string;
  text: string;
  /** when it was held (ms, Redis's clock) */
  heldAt: number;
  /** when the participant's token expires (ms): a mute lasts this long */
  exp: number;
}

export type Decision = 'approve' | 'reject' | 'mute';
export const DECISIONS: readonly Decision[] = ['approve', 'reject', 'mute'];

/** A decision as recorded: on which item, by whom, when (ms). A mute also rejects the participant's other queued texts. */
export interface DecisionRecord {
  id: string;
  decision: Decision;
  by: string;
  at: number;
  sub: string;
  lid: number;
  text: string;
  heldAt: number;
}

/** The queue's bounds (the gateway's settings). */
export interface QueueBounds {
  perLayout: number;
  perParticipant: number;
  holdMs: number;
}

/** What holding one text did to the queue. */
export interface HoldResult {
  /** false: an item with this id was queued already (the same Idempotency-Key again) */
  added: boolean;
  expired: number;
  /** the participant's oldest, dropped past its share */
  droppedParticipant: number;
  /** the queue was at its bound and the text would have needed a new place: not added */
  refusedFull: boolean;
}

/** How the action stream is trimmed on an approval's append (as on every append). */
export interface StreamTrimSettings {
  maxLen: number;
  retentionMs: number;
}

/** Decisions kept for the moderators' view (the newest). */
export const DECISIONS_KEPT = 500;

export class ModerationStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly record: RecordBounds,
  ) {}

  async hold(item: HeldItem, bounds: QueueBounds): Promise<HoldResult> {
    const k = this.keys.moderation(item.layoutId);
    const r = (await runScript(this.redis, 'holdText', [k.queue, k.items, k.subs], [item.id, item.sub, JSON.stringify(item), item.heldAt, bounds.perLayout, bounds.perParticipant, bounds.holdMs])) as number[];
    return { added: r[0] === 1, expired: Number(r[1]), droppedParticipant: Number(r[2]), refusedFull: r[0] === 2 };
  }

  /**
   * Decides one held text. `first` is false when it had been decided before (the record is the
   * first decision's); item_not_found when it was never held or expired.
   */
  async decide(layoutId: string, id: string, decision: Decision, by: string, trim: StreamTrimSettings): Promise<{ first: boolean; record: DecisionRecord }> {
    const k = this.keys.moderation(layoutId);
    const rec = this.keys.showRecord(layoutId);
    const r = (await runScript(
      this.redis,
      'decideText',
      [k.queue, k.items, k.subs, k.decided, k.decidedOrder, this.keys.actions(layoutId), this.keys.mutedSubs(layoutId), this.keys.layout(layoutId), rec.stream, rec.state],
      [id, decision, by, randomUUID(), ACTION_FIELD, trim.maxLen, trim.retentionMs, DECISIONS_KEPT, this.record.retentionMs, this.record.maxBytes, PARTICIPANT_MEMORY_MS],
    )) as [number, string?];
    if (r[0] === 0) throw new AppError('item_not_found', `no held text ${JSON.stringify(id)} in layout "${layoutId}" (never held, or expired)`);
    if (decision === 'mute' && r[0] === 1) await publishInvalidation(this.redis, this.keys, { kind: 'layout', id: layoutId });
    return { first: r[0] === 1, record: JSON.parse(r[1]!) as DecisionRecord };
  }

  /**
   * Mutes a participant, through its renewals, for as long as it can act at all
   * (PARTICIPANT_MEMORY_MS) or until unmuted: with a text of theirs queued, as a mute of it (their
   * other texts rejected); otherwise by itself.
   */
  async mute(layoutId: string, sub: string, by: string, trim: StreamTrimSettings): Promise<{ until: number; rejected: number }> {
    const queued = await this.redis.hget(this.keys.moderation(layoutId).subs, sub);
    const ids = queued ? (JSON.parse(queued) as string[]) : [];
    if (ids.length > 0) {
      await this.decide(layoutId, ids[0]!, 'mute', by, trim);
      const until = Number(await this.redis.hget(this.keys.mutedSubs(layoutId), sub));
      return { until, rejected: ids.length };
    }
    const rec = this.keys.showRecord(layoutId);
    const until = Number(await runScript(this.redis, 'muteSub', [this.keys.mutedSubs(layoutId), this.keys.layout(layoutId), rec.stream, rec.state], [sub, PARTICIPANT_MEMORY_MS, by, this.record.retentionMs, this.record.maxBytes]));
    if (until === 0) throw new AppError('layout_not_found', `no layout ${JSON.stringify(layoutId)}`);
    await publishInvalidation(this.redis, this.keys, { kind: 'layout', id: layoutId });
    return { until, rejected: 0 };
  }

  /** Unmutes a participant; `wasMuted` false when it was not muted (nothing changes then). */
  async unmute(layoutId: string, sub: string, by: string): Promise<{ wasMuted: boolean }> {
    const rec = this.keys.showRecord(layoutId);
    const r = Number(await runScript(this.redis, 'unmuteSub', [this.keys.mutedSubs(layoutId), this.keys.layout(layoutId), rec.stream, rec.state], [sub, by, this.record.retentionMs, this.record.maxBytes]));
    if (r === 0) throw new AppError('layout_not_found', `no layout ${JSON.stringify(layoutId)}`);
    if (r === 1) await publishInvalidation(this.redis, this.keys, { kind: 'layout', id: layoutId });
    return { wasMuted: r === 1 };
  }

  /**
   * The queue, oldest first (those past the hold time left out), and the newest decisions, newest
   * first, read at one moment (one script), so a decision made meanwhile shows in one or the other.
   */
  async list(layoutId: string, holdMs: number, now: number, decisions = 100): Promise<{ queue: HeldItem[]; decided: DecisionRecord[] }> {
    const k = this.keys.moderation(layoutId);
    const [items, records] = (await runScript(this.redis, 'listModeration', [k.queue, k.items, k.decided, k.decidedOrder], [now - holdMs, decisions])) as [string[], string[]];
    return { queue: items.map((x) => JSON.parse(x) as HeldItem), decided: records.map((x) => JSON.parse(x) as DecisionRecord) };
  }
}
