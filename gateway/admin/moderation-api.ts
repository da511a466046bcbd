// The moderators' part of the admin API: a layout's moderation queue and recent decisions (the team
// page asks every second, so several operators see the same queue), one decision per held text,
// and muting a participant. Decisions are recorded with the administrator's email.
import { AppError, orUnavailable } from '../errors.js';
import { parseJson } from '../http/body.js';
import type { RequestHead, Route } from '../http/route.js';
import type { Decision, DecisionRecord, HeldItem, QueueBounds, StreamTrimSettings } from '../store/moderation.js';
import type { StoredLayout } from '../store/layouts.js';
import { api, json, teamLayout, type AdminDeps } from './api.js';

export interface ModerationDeps {
  bounds: QueueBounds;
  trim: StreamTrimSettings;
  onDecided: (decision: Decision | 'unmute') => void;
}

const ITEM_ID = /^[A-Za-z0-9_-]{1,32}$/;
const SUB = /^[A-Za-z0-9_.:-]{1,128}$/;

/** A control's label by lid, on any page of the layout. */
function labels(layout: StoredLayout): Map<number, string> {
  return new Map(layout.pages.flatMap((p) => p.controls.map((c) => [c.lid, c.props.label] as const)));
}

const iso = (ms: number) => new Date(ms).toISOString();

function itemView(item: HeldItem, label: Map<number, string>) {
  return { id: item.id, sub: item.sub, lid: item.lid, label: label.get(item.lid) ?? '', text: item.text, heldAt: iso(item.heldAt) };
}

function decisionView(r: DecisionRecord, label: Map<number, string>) {
  return { id: r.id, decision: r.decision, by: r.by, at: iso(r.at), sub: r.sub, lid: r.lid, label: label.get(r.lid) ?? '', text: r.text, heldAt: iso(r.heldAt) };
}

/** The participant a mute or an unmute names: `{"sub": "..."}`, else 400 invalid_body. */
function subOf(raw: Buffer | null): string {
  const body = parseJson(raw) as { sub?: unknown } | null;
  if (typeof body?.sub === 'string' && SUB.test(body.sub)) return body.sub;
  throw new AppError('invalid_body', 'send {"sub": "<the participant\'s sub>"}');
}

export function moderationApiRoutes(d: AdminDeps, m: ModerationDeps): Route[] {
  const ownedLayout = async (head: RequestHead, write: boolean) => {
    const { layout, session } = await teamLayout(d, head, write);
    return { layout, by: `admin:${session.email}` };
  };
  return [
    api({
      method: 'get',
      pattern: '/admin/api/layouts/:layoutId/moderation',
      params: 1,
      async handle(head) {
        const { layout } = await ownedLayout(head, false);
        const now = d.now();
        const { queue, decided } = await orUnavailable(d.stores.moderation.list(layout.layoutId, m.bounds.holdMs, now));
        const label = labels(layout);
        return json({ layoutId: layout.layoutId, at: iso(now), bounds: m.bounds, queue: queue.map((i) => itemView(i, label)), decided: decided.map((r) => decisionView(r, label)) });
      },
    }),
    api({
      method: 'post',
      pattern: '/admin/api/layouts/:layoutId/moderation/:id/:decision',
      params: 3,
      async handle(head) {
        const { layout, by } = await ownedLayout(head, true);
        const [, id = '', decision = ''] = head.params;
        if (decision !== 'approve' && decision !== 'reject' && decision !== 'mute') throw new AppError('not_found');
        if (!ITEM_ID.test(id)) throw new AppError('item_not_found');
        const { first, record } = await orUnavailable(d.stores.moderation.decide(layout.layoutId, id, decision, by, m.trim));
        if (first) m.onDecided(decision);
        return json({ layoutId: layout.layoutId, first, ...decisionView(record, labels(layout)) });
      },
    }),
    api({
      method: 'post',
      pattern: '/admin/api/layouts/:layoutId/mute',
      params: 1,
      body: true,
      async handle(head, raw) {
        const { layout, by } = await ownedLayout(head, true);
        const sub = subOf(raw);
        const { until, rejected } = await orUnavailable(d.stores.moderation.mute(layout.layoutId, sub, by, m.trim));
        m.onDecided('mute');
        return json({ layoutId: layout.layoutId, sub, mutedUntil: iso(until), rejected });
      },
    }),
    api({
      method: 'post',
      pattern: '/admin/api/layouts/:layoutId/unmute',
      params: 1,
      body: true,
      async handle(head, raw) {
        const { layout, by } = await ownedLayout(head, true);
        const sub = subOf(raw);
        const { wasMuted } = await orUnavailable(d.stores.moderation.unmute(layout.layoutId, sub, by));
        if (wasMuted) m.onDecided('unmute');
        return json({ layoutId: layout.layoutId, sub, wasMuted });
      },
    }),
  ];
}
