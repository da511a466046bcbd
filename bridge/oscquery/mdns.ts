// Advertises the OSCQuery server over mDNS as the proposal asks (`_oscjson._tcp`), with
// bonjour-service, so a show computer on the venue network lists the bridge without typing its
// address. A failure of mDNS (the port 5353 refused, a network without multicast) is logged and
// never stops the bridge: the address can still be entered by hand.
import type { EventEmitter } from 'node:events';
import { Bonjour } from 'bonjour-service';
import type { Logger } from '../../runtime/log.js';

/** An mDNS instance name: at most 63 bytes (a DNS label). */
function instanceName(name: string): string {
  let out = name;
  while (Buffer.byteLength(out) > 63) out = out.slice(0, -1);
  return out;
}

/** Whether an address only this host reaches: nothing to advertise on a network. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}

export interface Advertisement {
  close(): Promise<void>;
}

export function advertiseOscQuery(name: string, port: number, log: Logger): Advertisement {
  const failed = (e: unknown) => log.warn({ err: (e as Error).message }, 'OSCQuery: the mDNS advertisement failed; enter the address by hand');
  const bonjour = new Bonjour({}, failed);
  // multicast-dns throws an 'error' nobody listens to (EACCES, EADDRINUSE on 5353): listen to it
  (bonjour as unknown as { server?: { mdns?: EventEmitter } }).server?.mdns?.on('error', failed);
  const service = bonjour.publish({ name: instanceName(name), type: 'oscjson', protocol: 'tcp', port });
  service.on('error', failed);
  service.on('up', () => log.info({ name: service.name, port }, 'OSCQuery advertised over mDNS (_oscjson._tcp)'));
  return {
    close: () =>
      new Promise<void>((resolve) => {
        bonjour.unpublishAll(() => bonjour.destroy(() => resolve()));
        setTimeout(resolve, 1000).unref(); // a network that swallows the goodbye packet does not hold the stop up
      }),
  };
}
