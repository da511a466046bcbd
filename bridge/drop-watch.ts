// A bridge that drops every action it reads (all stale, all dead-lettered, all lost to trimming)
// plays nothing while its loops look healthy. This watch compares each layout's counters with
// those of WINDOW_MS ago: when entries were dropped and none played in that window, /readyz says so
// with the reasons, and the log says so once a minute while it lasts. It never touches the
// watchdog: a restart would drop the same entries again.
import type { Logger } from '../runtime/log.js';
import type { BridgeCounters, LayoutCounters } from './counters.js';

export const DROP_WINDOW_MS = 5000;
const STEP_MS = 1000;
const LOG_EVERY_MS = 60_000;

type Figures = Pick<LayoutCounters, 'sent' | 'coalesced' | 'duplicates' | 'summaries' | 'droppedStale' | 'deadLettered' | 'lostTrimmed' | 'lostUnread'>;

const figures = (c: LayoutCounters): Figures => ({
  sent: c.sent, coalesced: c.coalesced, duplicates: c.duplicates, summaries: c.summaries,
  droppedStale: c.droppedStale, deadLettered: c.deadLettered, lostTrimmed: c.lostTrimmed, lostUnread: c.lostUnread,
});

/** What the window shows, in words, if a layout dropped entries and played none; else null. */
export function droppingAll(layoutId: string, before: Figures, after: Figures): string | null {
  const d = (k: keyof Figures) => after[k] - before[k];
  const played = d('sent') + d('coalesced') + d('duplicates') + d('summaries');
  const reasons = [
    [d('droppedStale'), 'older than maxAgeMs (is a clock or the link late?)'],
    [d('deadLettered'), 'dead-lettered (see its dead-letter stream)'],
    [d('lostTrimmed') + d('lostUnread'), 'trimmed before they were sent'],
  ] as const;
  const dropped = reasons.reduce((n, [k]) => n + k, 0);
  if (played > 0 || dropped === 0) return null;
  const why = reasons.filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}`).join(', ');
  return `layout ${layoutId}: dropped all ${dropped} entries of the last ${DROP_WINDOW_MS / 1000} s and played none: ${why}`;
}

export class DropWatch {
  private readonly history = new Map<string, Figures[]>();
  private readonly problems = new Map<string, string>();
  private readonly loggedAt = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly counters: BridgeCounters,
    private readonly layoutIds: readonly string[],
    private readonly log: Logger,
  ) {}

  start(): void {
    for (const id of this.layoutIds) this.history.set(id, [figures(this.counters.layout(id))]); // what comes from now on counts
    this.timer = setInterval(() => this.step(Date.now()), STEP_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Each layout dropping everything, in words (for /readyz), or null. */
  problem(): string | null {
    return this.problems.size > 0 ? [...this.problems.values()].join('; ') : null;
  }

  step(now: number): void {
    const keep = DROP_WINDOW_MS / STEP_MS + 1;
    for (const id of this.layoutIds) {
      const past = this.history.get(id) ?? [];
      const current = figures(this.counters.layout(id));
      past.push(current);
      if (past.length > keep) past.shift();
      this.history.set(id, past);
      const problem = droppingAll(id, past[0]!, current);
      if (problem === null) {
        if (this.problems.delete(id)) this.log.info({ layoutId: id }, 'layout no longer drops every entry it reads');
        continue;
      }
      this.problems.set(id, problem);
      if (now - (this.loggedAt.get(id) ?? -Infinity) >= LOG_EVERY_MS) {
        this.log.error({ layoutId: id, problem }, 'a layout drops every entry it reads');
        this.loggedAt.set(id, now);
      }
    }
  }
}
