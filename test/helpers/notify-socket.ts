// A fake systemd notification socket (notify-socket.py) for the sd_notify tests.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from './gateway.js';

export interface FakeNotifySocket {
  /** the path to pass as NOTIFY_SOCKET */
  path: string;
  child: ChildProcess;
  /** every datagram received so far, one per line ("|" for newlines inside) */
  text(): string;
  /** performance.now() of each WATCHDOG=1 received */
  pings: number[];
}

/** `holdMs`: how long the socket holds each barrier before letting systemd-notify return (a busy service manager). */
export async function startFakeNotifySocket(holdMs = 0): Promise<FakeNotifySocket> {
  const path = join(mkdtempSync(join(tmpdir(), 'ac-notify-')), 'notify.sock');
  const child = spawn('python3', [fileURLToPath(new URL('./notify-socket.py', import.meta.url)), path, String(holdMs)]);
  const pings: number[] = [];
  let text = '';
  child.stdout.on('data', (d: Buffer) => {
    text += String(d);
    for (const _ of String(d).match(/WATCHDOG=1/g) ?? []) pings.push(performance.now());
  });
  await eventually(() => text.includes('listening'));
  return { path, child, text: () => text, pings };
}
