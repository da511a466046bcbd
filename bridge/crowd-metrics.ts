// The crowd's values and cues as Prometheus gauges, so a Grafana panel can show them. Labels are
// `layout` and `lid` only (bounded by the configured layouts and their aggregated controls): a vote
// is shown by its leading option and that option's share, a centroid by its x and y; zones are not
// labelled (they are on the wire and on the team page).
import { Counter, Gauge, type Registry } from 'prom-client';
import { voteLeader } from '../schemas/crowd-cue.js';
import type { CrowdValue } from '../schemas/crowd-merge.js';
import type { LayoutCues } from './cues.js';

export interface CrowdSource {
  layoutId: string;
  values: () => CrowdValue[];
  cues: LayoutCues;
}

const PHASE_NUMBER = { armed: 0, holding: 1, fired: 2 } as const;

export function registerCrowdMetrics(registry: Registry, sources: readonly CrowdSource[]): void {
  /** A gauge set at scrape time from each layout's crowd values. */
  const perValue = (name: string, help: string, read: (v: CrowdValue) => number | null) =>
    new Gauge({
      name,
      help,
      labelNames: ['layout', 'lid'],
      registers: [registry],
      collect() {
        this.reset();
        for (const s of sources) {
          for (const v of s.values()) {
            const x = read(v);
            if (x !== null) this.labels(s.layoutId, String(v.lid)).set(x);
          }
        }
      },
    });
  perValue('audience_bridge_crowd_value', "The crowd's value of each aggregated control as the displays get it: the mean, median, trimmed mean, fraction or rate; a centroid's x; a vote's leading option (-1 for none or a tie).", (v) =>
    v.mode === 'votes' ? (voteLeader(v.value)?.index ?? -1) : (v.value[0] ?? 0),
  );
  perValue('audience_bridge_crowd_value_y', "A centroid's y.", (v) => (v.mode === 'centroid' ? (v.value[1] ?? 0) : null));
  perValue('audience_bridge_crowd_leading_share', "A vote's leading option's share of the votes (0 for none).", (v) => (v.mode === 'votes' ? (voteLeader(v.value)?.share ?? 0) : null));
  perValue('audience_bridge_crowd_participants', 'Participants counted in the crowd value (its n).', (v) => v.n);
  new Gauge({
    name: 'audience_bridge_crowd_cue_phase',
    help: "Each crowd cue's phase: 0 armed, 1 holding (the condition holds, not yet for holdMs), 2 fired (latched for a vote; for a threshold, its last value stands).",
    labelNames: ['layout', 'lid'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of sources) for (const c of s.cues.phases()) this.labels(s.layoutId, String(c.lid)).set(PHASE_NUMBER[c.phase]);
    },
  });
  new Gauge({
    name: 'audience_bridge_crowd_cue_output',
    help: "Each crowd cue's last fired value in its arm: a vote's winning index, a threshold's 1 or 0; -1 before any.",
    labelNames: ['layout', 'lid'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of sources) for (const c of s.cues.phases()) this.labels(s.layoutId, String(c.lid)).set(c.output ?? -1);
    },
  });
  new Counter({
    name: 'audience_bridge_crowd_cues_sent_total',
    help: 'Crowd cues this bridge sent to its displays (its own firings and those of another bridge on the layout).',
    labelNames: ['layout', 'lid'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of sources) for (const [lid, n] of s.cues.firedCount) this.labels(s.layoutId, String(lid)).inc(n);
    },
  });
}
