// The address a request came from, for budgets kept per address: the peer itself, or behind a
// trusted proxy (TRUST_PROXY) the last X-Forwarded-For hop, the one that proxy wrote. Earlier hops
// are whatever the client sent, so they are never believed.

/** `remote`: the peer's address as uWS gives it; `forwardedFor`: the X-Forwarded-For header ('' when absent). */
export function clientAddress(remote: string, forwardedFor: string, trustProxy: boolean): string {
  if (trustProxy && forwardedFor !== '') {
    const last = forwardedFor.slice(forwardedFor.lastIndexOf(',') + 1).trim();
    if (last !== '') return last;
  }
  return remote || 'unknown';
}
