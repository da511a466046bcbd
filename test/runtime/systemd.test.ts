// sd_notify through the real systemd-notify program, to a fake notification socket (a Python
// process) that holds each notification's barrier: a slow service manager, or a machine so busy
// that each systemd-notify takes longer than the watchdog's interval.
import { afterEach, describe, expect, it } from 'vitest';
import { SystemdNotifier } from '../../runtime/systemd.js';
import { eventually } from '../helpers/gateway.js';
import { startFakeNotifySocket, type FakeNotifySocket } from '../helpers/notify-socket.js';

const HOLD_MS = 200;
let socket: FakeNotifySocket | undefined;
afterEach(() => {
  socket?.child.kill('SIGKILL');
  socket = undefined;
});

describe('SystemdNotifier', () => {
  it('keeps at most one WATCHDOG=1 waiting, so READY=1 is not queued behind pings it outran', async () => {
    socket = await startFakeNotifySocket(HOLD_MS);
    const notifier = new SystemdNotifier({ NOTIFY_SOCKET: socket.path, PATH: process.env.PATH });
    // pings every 20 ms for 2 s, each taking at least HOLD_MS to deliver: 100 asked for
    const pinger = setInterval(() => void notifier.notify('WATCHDOG=1'), 20);
    await new Promise((r) => setTimeout(r, 2000));
    const ready = notifier.notify('READY=1');
    clearInterval(pinger);
    await ready;
    await eventually(() => socket!.text().includes('READY=1'));
    // before READY=1: the pings delivered in the 2 s (one per HOLD_MS at most) and at most the one
    // being delivered and one waiting when it was asked for, not the ~90 asked for meanwhile
    const before = socket.text().slice(0, socket.text().indexOf('READY=1'));
    const pingsBefore = before.match(/WATCHDOG=1/g)?.length ?? 0;
    expect(pingsBefore).toBeGreaterThan(0);
    expect(pingsBefore).toBeLessThanOrEqual(2000 / HOLD_MS + 2);
  });

  it('sends every other notification, in the order asked', async () => {
    socket = await startFakeNotifySocket(HOLD_MS);
    const notifier = new SystemdNotifier({ NOTIFY_SOCKET: socket.path, PATH: process.env.PATH });
    void notifier.notify('STATUS=one');
    void notifier.notify('WATCHDOG=1');
    void notifier.notify('STATUS=two');
    await notifier.notify('STOPPING=1');
    await eventually(() => socket!.text().includes('STOPPING=1'));
    const sent = socket.text().split('\n').filter((l) => /STATUS|STOPPING|WATCHDOG/.test(l));
    expect(sent.map((l) => l.replace(/^MAINPID=\d+\|/, ''))).toEqual(['STATUS=one', 'WATCHDOG=1', 'STATUS=two', 'STOPPING=1']);
  });
});
