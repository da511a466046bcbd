// Whether ports are free before a process starts on them: the demo checks all of its ports at once
// and names every taken one with the variable that moves it, instead of failing one port at a time.
import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';

export interface PortNeed {
  /** the environment variable that sets it */
  variable: string;
  host: string;
  port: number;
  protocol: 'tcp' | 'udp';
}

/** True when nothing listens on the port (0: any port, always free). */
export function portIsFree(need: Pick<PortNeed, 'host' | 'port' | 'protocol'>): Promise<boolean> {
  if (need.port === 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    if (need.protocol === 'udp') {
      const socket = createSocket('udp4');
      socket.once('error', () => resolve(false));
      socket.bind(need.port, need.host, () => socket.close(() => resolve(true)));
      return;
    }
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(need.port, need.host, () => server.close(() => resolve(true)));
  });
}

/** The needs whose port is taken. */
export async function takenPorts(needs: readonly PortNeed[]): Promise<PortNeed[]> {
  const free = await Promise.all(needs.map(portIsFree));
  return needs.filter((_, i) => !free[i]);
}

/** One message naming every taken port and the variable that moves it, with a command that does. */
export function describeTaken(taken: readonly PortNeed[], command: string): string {
  const list = taken.map((t) => `${t.variable}=${t.port} (${t.protocol.toUpperCase()} ${t.host})`).join(', ');
  const example = taken.map((t) => `${t.variable}=${t.port + 10}`).join(' ');
  return `these ports are in use: ${list}. Another program (or another demo) holds them; set the variables to free ports, e.g. ${example} ${command}`;
}
