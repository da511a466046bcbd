// What a benched gateway lets one participant and one API key do.

/**
 * The per-participant and per-key limits of a benched gateway: raised, since a bench plays a few
 * thousand participants at tens of thousands of actions a second (each far above a phone's budget).
 * Every action still passes through the limiter; it just never refuses one.
 */
export const BENCH_LIMITS: Record<string, string> = {
  ACTION_RATE_PER_SECOND: '10000',
  ACTION_BURST: '100000',
  STRING_RATE_PER_SECOND: '10000',
  STRING_BURST: '100000',
  MINT_RATE_PER_SECOND: '100000',
  MINT_BURST: '1000000',
  // the live benches share a few thousand tokens among up to 50,000 sockets
  LIVE_SOCKETS_PER_PARTICIPANT: '100',
  LIVE_OPENS_PER_PARTICIPANT_PER_MINUTE: '10000',
};
