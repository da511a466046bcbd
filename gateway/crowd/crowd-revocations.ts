// Revoked participants leave the crowd. A token refused from its revocation on must not keep
// counting what it sent before: a layout's cut-off (the end of its show, `token revoke --layout`,
// with `--before`) and its revoked participants (`--sub`) take the participants they revoke out of
// every window of the layout in this process, and the next fold tick tells the bridge, so the
// display's n drops at once instead of as their values age out (a vote's window is 60 s), and a
// DMX route on a layout that ended goes stale. A window holds, beside each participant's value,
// when the token it last acted with was minted; this looks only when a layout's revocations
// changed, at its invalidation message and at each re-check of the caches.
import { revokedByLayout, sameRevocations } from '../auth/token-claims.js';
import type { LiveLayout } from '../layouts/layout-cache.js';
import type { Revoked } from './crowd-window.js';

type Revocations = Pick<LiveLayout, 'tokensRevokedBefore' | 'revokedSubs'>;

export interface RevocableCrowd {
  revoke(layoutId: string, revoked: Revoked): number;
  /** the layouts it counts participants of */
  layouts(): Set<string>;
}

export class CrowdRevocations {
  /** each layout's revocations as last applied to the crowd */
  private readonly applied = new Map<string, Revocations>();

  constructor(
    private readonly crowd: RevocableCrowd,
    private readonly layouts: { get(layoutId: string): Promise<LiveLayout | null> | LiveLayout | null },
    /** a layout that could not be read (Redis away): the next re-check looks again */
    private readonly onUnavailable: (e: unknown) => void,
    /** told how many values left, when some did */
    private readonly onLeft: (layoutId: string, values: number) => void = () => {},
  ) {}

  /** A layout changed (its invalidation message): its revoked participants leave the crowd here. */
  layoutChanged(layoutId: string): void {
    if (!this.crowd.layouts().has(layoutId)) {
      this.applied.delete(layoutId);
      return;
    }
    void Promise.resolve(this.layouts.get(layoutId)).then((layout) => this.apply(layoutId, layout), this.onUnavailable);
  }

  /** The caches were re-read: every layout counted here is looked at again (a message may have been missed). */
  recheck(): void {
    for (const layoutId of this.crowd.layouts()) this.layoutChanged(layoutId);
  }

  private apply(layoutId: string, layout: LiveLayout | null): void {
    // a layout deleted ends its show: every participant leaves
    const revoked: Revoked = layout ? (sub, mintedAt) => revokedByLayout({ sub, mintedAt }, layout) : () => true;
    if (layout) {
      const seen = this.applied.get(layoutId);
      if (seen && sameRevocations(seen, layout)) return;
      this.applied.set(layoutId, { tokensRevokedBefore: layout.tokensRevokedBefore, revokedSubs: layout.revokedSubs });
    } else this.applied.delete(layoutId);
    const left = this.crowd.revoke(layoutId, revoked);
    if (left > 0) this.onLeft(layoutId, left);
  }
}

