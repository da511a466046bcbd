// The address a request came from, for budgets kept per address: the peer itself, or, when the peer
// is a trusted proxy (TRUST_PROXY: the load balancer's addresses and networks), the last
// X-Forwarded-For hop, the one that proxy wrote. Earlier hops are whatever the client sent, so they
// are never believed, and neither is any header of a peer outside TRUST_PROXY.
import { BlockList, isIP } from 'node:net';

/** The peers whose X-Forwarded-For and X-Forwarded-Proto are believed (TRUST_PROXY). */
export class TrustedProxies {
  private constructor(
    private readonly list: BlockList,
    /** none at all: nothing is looked up */
    readonly none: boolean,
  ) {}

  /**
   * TRUST_PROXY: a comma-separated list of IPv4 or IPv6 addresses and networks (`10.0.0.5`,
   * `10.1.0.0/16`, `fd00::/8`); '' or `false`: none. Throws, naming the entry, for anything else
   * (`true` included: it trusted every peer, so anyone could forge the headers).
   */
  static parse(text: string): TrustedProxies {
    const list = new BlockList();
    const value = text.trim();
    if (value === '' || value === 'false') return new TrustedProxies(list, true);
    if (value === 'true') throw new Error('true is not accepted (it believed every peer): name the load balancer\'s addresses or networks, e.g. 10.0.0.5,10.1.0.0/16');
    for (const entry of value.split(',').map((e) => e.trim())) {
      const [address = '', bits, ...rest] = entry.split('/');
      const family = isIP(address);
      const prefix = bits === undefined ? null : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN;
      if (family === 0 || rest.length > 0 || Number.isNaN(prefix) || (prefix !== null && prefix > (family === 4 ? 32 : 128))) {
        throw new Error(`"${entry}" is not an IPv4 or IPv6 address or network (address/prefix)`);
      }
      const type = family === 4 ? 'ipv4' : 'ipv6';
      if (prefix === null) list.addAddress(address, type);
      else list.addSubnet(address, prefix, type);
    }
    return new TrustedProxies(list, false);
  }

  /** Whether the peer (as uWS gives it: IPv4, IPv6, or IPv4-mapped IPv6) is a trusted proxy. */
  trusts(peer: string): boolean {
    if (this.none || peer === '') return false;
    const address = peer.startsWith('::ffff:') && isIP(peer.slice(7)) === 4 ? peer.slice(7) : peer;
    const family = isIP(address);
    return family !== 0 && this.list.check(address, family === 4 ? 'ipv4' : 'ipv6');
  }
}

/** `remote`: the peer's address as uWS gives it; `forwardedFor`: the X-Forwarded-For header ('' when absent). */
export function clientAddress(remote: string, forwardedFor: string, trusted: TrustedProxies): string {
  if (forwardedFor !== '' && trusted.trusts(remote)) {
    const last = forwardedFor.slice(forwardedFor.lastIndexOf(',') + 1).trim();
    if (last !== '') return last;
  }
  return remote || 'unknown';
}
