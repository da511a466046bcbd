// Builds a running bridge: Redis -> per layout a scheduler (send loop) and a consumer (read loop)
// -> presence -> systemd READY, STATUS and a progress-gated WATCHDOG.
import { tlsVerificationOff } from '../runtime/redis-tls.js';
import type { RedisClient } from '../runtime/redis.js';
import { bridgeRedisTarget, type BridgeConfig } from './config.js';
import { LayoutConsumer } from './consumer.js';
import { LayoutCues } from './cues.js';
import { CrowdRecord } from './crowd-record.js';
import { streamAcker } from './stream-group.js';
import { BridgeCounters } from './counters.js';
import type { Logger } from '../runtime/log.js';
import { BridgeMetrics } from './metrics.js';
import { LightIn, registerLightMetrics } from './light-in.js';
import { registerSacnMetrics, SacnIn } from './light-dmx.js';
import { RedisClock, clockOffsetProblem, type ClockReading, registerClockMetrics, watchClockOffset } from '../runtime/redis-clock.js';
import { DropWatch } from './drop-watch.js';
import { startOpsServer } from '../runtime/ops-server.js';
import { Presence } from './presence.js';
import { connectBridgeRedis, connectWithRetry, replaceSilentConnection } from '../runtime/redis.js';
import { LayoutScheduler } from './scheduler.js';
import { dmxLane, registerDmxMetrics } from './dmx/dmx-output.js';
import { startOscQuery, type OscQuery } from './oscquery/service.js';
import { SystemdNotifier } from '../runtime/systemd.js';
import { prioritiseSendPath, sendCpuProblem } from './thread-priority.js';
import { tickClockReady } from './tick-clock.js';

/**
 * The reader stops while a target has this many ticks' worth of messages queued. Two keep every
 * tick full; more only keeps entries alive in memory longer, and under a backlog those survivors
 * made the young-generation GC copy (and the old generation collect) for up to 16 ms at a time.
 */
const BACKLOG_TICKS = 2;

export interface Bridge {
  readonly counters: BridgeCounters;
  /** port of /metrics, /healthz, /readyz */
  readonly opsPort: number;
  /** the OSCQuery server, with oscQueryPort */
  readonly oscQuery: OscQuery | null;
  readonly schedulers: readonly LayoutScheduler[];
  /** each layout's crowd cues */
  readonly cues: readonly LayoutCues[];
  /** this host's clock against Redis's */
  clock(): ClockReading;
  /** Entries of a layout read and not yet settled (the "pending" of the counter identity). */
  pending(layoutId: string): number;
  /** Graceful stop: STOPPING=1, stop reading, send what is queued, deregister, disconnect. */
  stop(): Promise<void>;
}

export interface BridgeOptions {
  log: Logger;
  now?: () => number;
  /** the environment sd_notify reads (NOTIFY_SOCKET, WATCHDOG_USEC); default process.env, {} for none */
  notifyEnv?: NodeJS.ProcessEnv;
  /** longest BLOCK of a stream read (also bounded by the watchdog interval) */
  blockMs?: number;
  /** reclaim pending entries idle longer than this */
  reclaimIdleMs?: number;
  /**
   * entries per stream read, at most (default 64): a reply is parsed in one go, so a larger read
   * holds a tick back longer (bench -- bridge at 100 Hz: lateness p99 4.5 to 4.9 ms with 256, 5.4 to
   * 6.3 with 1,000, at the same throughput; 64 against 256 at 1,000 Hz: 63,944 and 64,492 against
   * 59,845 and 59,183 messages/s, p99 2.00 and 2.41 against 2.21 and 3.60 ms; at 100 Hz p99 2.13,
   * 4.97, 4.61, 3.94 against 5.95, 4.81, 5.03, 5.74 ms at 3 % less throughput)
   */
  readCount?: number;
  /**
   * Before the schedule starts, make every thread but the event loop and the tick clock SCHED_IDLE,
   * or with the config's sendCpu give those two that CPU and the others the rest
   * (thread-priority.ts). For the bridge's own process (main.ts, bench -- bridge): it changes the
   * whole process, so a test that runs a bridge inside its runner leaves it off (the default).
   */
  prioritiseSendPath?: boolean;
}

const STATUS_EVERY_MS = 5000;

export async function startBridge(config: BridgeConfig, opts: BridgeOptions): Promise<Bridge> {
  const { log } = opts;
  // refused before anything connects: the CPUs are placed just before the schedule starts
  const cpuProblem = opts.prioritiseSendPath && config.sendCpu !== undefined ? sendCpuProblem(config.sendCpu) : null;
  if (cpuProblem) throw new Error(cpuProblem);
  const counters = new BridgeCounters();
  const notifier = new SystemdNotifier(opts.notifyEnv ?? process.env, (e) => {
    counters.notifyFailures++;
    log.warn({ err: e.message }, 'systemd-notify failed');
  });
  const watchdogMs = notifier.watchdogIntervalMs();
  const blockMs = Math.min(opts.blockMs ?? 1000, watchdogMs ? Math.floor(watchdogMs / 2) : Infinity);
  let stopping = false;

  const ops = connectBridgeRedis(bridgeRedisTarget(config), `audience-bridge:${config.bridgeId}`, 2000);
  await connectWithRetry(ops, log, () => stopping, bridgeRedisTarget(config));
  const opsLink = replaceSilentConnection(ops, 1000, () => log.warn('the Redis link went silent (a PING unanswered for 2 s); connecting again'));
  // Ages are read in Redis's clock, as the gateway stamps them; timetags go out in this host's,
  // which its displays share (a test's own `now` aside: then both are that).
  let clockFailures = 0;
  const clock = new RedisClock(ops, (e) => {
    if (clockFailures++ % 12 === 0) log.warn({ err: (e as Error).message, failures: clockFailures }, "could not read Redis's TIME for the clock offset; the last offset stays");
  });
  if (!opts.now) {
    await clock.sync().catch((e: unknown) => log.warn({ err: (e as Error).message }, "could not read Redis's TIME; the clock offset is taken as 0 until it can"));
    clock.start();
  }
  const now = opts.now ?? clock.now;
  const toLocal = opts.now ? (ms: number) => ms : (ms: number) => clock.toLocal(ms);
  const clockNote = () => clockOffsetProblem(clock.reading(), config.clockOffsetWarnMs);
  const clockWatch = watchClockOffset(clockNote, log);
  const tlsOff = tlsVerificationOff();
  if (tlsOff) log.warn(tlsOff);
  const readers: RedisClient[] = [];
  const schedulers: LayoutScheduler[] = [];
  const consumers: LayoutConsumer[] = [];
  const cues: LayoutCues[] = [];
  const records: CrowdRecord[] = [];
  for (const layout of config.layouts) {
    // a read may wait behind the one in flight (consumer.ts): two BLOCKs and a round trip
    const readTimeoutMs = 2 * blockMs + Math.max(500, blockMs);
    const reader = connectBridgeRedis(bridgeRedisTarget(config), `audience-bridge:${config.bridgeId}:read`, readTimeoutMs);
    await connectWithRetry(reader, log, () => stopping, bridgeRedisTarget(config));
    readers.push(reader);
    const scheduler = new LayoutScheduler(layout, streamAcker(ops, config.redisPrefix, config.bridgeId, layout.layoutId), counters, log, now, toLocal);
    scheduler.dmx = layout.dmxTargets.map((t) => dmxLane(config.bridgeId, t, now, log));
    const consumer = new LayoutConsumer(
      reader,
      ops,
      scheduler,
      { prefix: config.redisPrefix, bridgeId: config.bridgeId, blockMs, readTimeoutMs, count: opts.readCount ?? 64, maxBacklog: layout.maxMessagesPerTick * BACKLOG_TICKS, reclaimIdleMs: opts.reclaimIdleMs ?? 30_000, deadLetterMaxLen: 10_000 },
      counters,
      log,
      now,
    );
    await consumer.ensureGroup();
    cues.push(new LayoutCues(ops, config.redisPrefix, layout.layoutId, config.bridgeId, scheduler.crowd, log, now));
    records.push(new CrowdRecord(ops, config.redisPrefix, layout.layoutId, () => scheduler.crowd.crowdValues(), log, now));
    schedulers.push(scheduler);
    consumers.push(consumer);
  }

  const oscQuery = config.oscQueryPort === undefined ? null : await startOscQuery(config, ops, log);
  if (oscQuery) for (const s of schedulers) s.onPlayed = (target, messages) => oscQuery.played(s.settings.layoutId, target, messages);

  const pendingOf = (layoutId: string) => schedulers.find((x) => x.settings.layoutId === layoutId)?.pending() ?? 0;
  /** every (layout, target) and whether its display is reachable */
  const displays = () => schedulers.flatMap((s) => s.targetStates().map((t) => ({ layoutId: s.settings.layoutId, ...t })));
  const presence = new Presence(
    ops,
    config.redisPrefix,
    config.bridgeId,
    schedulers.flatMap((s) => s.targetNames.map((target) => ({ layoutId: s.settings.layoutId, target }))),
    config.presenceTtlMs,
    (e) => log.warn({ err: (e as Error).message }, 'presence heartbeat failed'),
    now,
    () => new Set(displays().filter((d) => !d.up).map((d) => `${d.layoutId}|${d.target}`)),
  );
  await presence.start();
  const metrics = new BridgeMetrics({
    counters,
    redis: ops,
    prefix: config.redisPrefix,
    bridgeId: config.bridgeId,
    layouts: config.layouts.map((l) => l.layoutId),
    crowd: schedulers.map((sc, i) => ({ layoutId: sc.settings.layoutId, values: () => sc.crowd.crowdValues(), cues: cues[i]! })),
    newestRead: () => counters.newestRead,
    pending: pendingOf,
    lastHeartbeat: () => presence.lastBeat,
    displays,
    now,
  });
  counters.onLateness = (ms) => metrics.lateness.observe(ms / 1000);
  registerDmxMetrics(metrics.registry, schedulers.map((sc) => ({ layoutId: sc.settings.layoutId, dmx: sc.dmx })));
  const lights: LightIn[] = [];
  for (const l of config.layouts) {
    if (l.lightOscPort === undefined && !config.sacn) continue;
    const input = new LightIn(ops, config.redisPrefix, l.layoutId, log);
    if (l.lightOscPort !== undefined) log.info({ layoutId: l.layoutId, host: config.lightOscHost, port: await input.listen(config.lightOscHost, l.lightOscPort) }, 'light OSC input listening');
    lights.push(input);
  }
  registerLightMetrics(metrics.registry, lights);
  const sacn = config.sacn ? new SacnIn(lights, config.sacn, log) : null;
  if (sacn) {
    await sacn.start();
    registerSacnMetrics(metrics.registry, sacn);
    log.info({ port: config.sacn!.port, interface: config.sacn!.interface ?? 'any', universes: sacn.universes }, 'sACN input listening');
  }
  const drops = new DropWatch(counters, config.layouts.map((l) => l.layoutId), log);
  // Ready while every read loop's last read worked, no send loop is failing and no layout drops all it reads; else says which and why.
  const opsServer = await startOpsServer(config.opsHost, config.opsPort, metrics.registry, () => {
    const problems = [...consumers, ...schedulers, drops].map((x) => x.problem()).filter((p): p is string => p !== null);
    return Promise.resolve(problems.length > 0 ? problems.join('; ') : null);
  }, () => [clockNote(), oscQuery?.problem() ?? null, tlsOff].filter((n) => n !== null).join('; ') || null);
  registerClockMetrics(metrics.registry, 'audience_bridge_', () => clock.reading());
  if (opts.prioritiseSendPath) {
    const placed = await prioritiseSendPath(await tickClockReady(), config.sendCpu);
    if (placed.skipped || placed.unchanged > 0 || placed.unplaced > 0) log.warn(placed, 'helper threads keep their priority or CPU (some or all): ticks may wait for them on a busy core');
    else log.info(placed, placed.sendCpu === undefined ? 'helper threads yield to the send schedule' : "helper threads keep off the send path's CPU");
  }
  for (const s of schedulers) s.start();
  for (const c of cues) c.start();
  for (const r of records) r.start();
  for (const c of consumers) c.start();
  drops.start();
  const displaysNote = () => {
    const all = displays();
    const down = all.filter((d) => !d.up).map((d) => d.target);
    return `${all.length - down.length} of ${all.length} displays reachable${down.length > 0 ? ` (not: ${[...new Set(down)].join(', ')})` : ''}`;
  };
  const status = () => `STATUS=${counters.status()}; ${displaysNote()}${clockNote() === null ? '' : `; ${clockNote()}`}`;
  await notifier.notify('READY=1', status());
  log.info({ bridgeId: config.bridgeId, layouts: config.layouts.map((l) => l.layoutId), watchdogMs, opsPort: opsServer.port, ...(oscQuery && { oscQueryPort: oscQuery.port }) }, 'audience-bridge running');

  const statusTimer = setInterval(() => void notifier.notify(status()), STATUS_EVERY_MS);
  statusTimer.unref();
  // WATCHDOG=1 only while every read loop and send loop has shown progress since the last ping.
  let lastPing = now();
  const watchdogTimer = watchdogMs
    ? setInterval(() => {
        const alive = consumers.every((c) => c.alive(lastPing - blockMs)) && schedulers.every((s) => s.lastProgress >= lastPing - blockMs);
        if (alive) {
          lastPing = now();
          void notifier.notify('WATCHDOG=1');
        } else log.error('a read or send loop made no progress; withholding WATCHDOG=1');
      }, watchdogMs)
    : undefined;
  watchdogTimer?.unref();

  return {
    counters,
    opsPort: opsServer.port,
    oscQuery,
    schedulers,
    cues,
    pending: pendingOf,
    clock: () => clock.reading(),
    async stop() {
      stopping = true;
      clearInterval(statusTimer);
      clearInterval(watchdogTimer);
      clearInterval(clockWatch);
      clearInterval(opsLink);
      drops.stop();
      clock.stop();
      await notifier.notify('STOPPING=1', 'STATUS=stopping: sending what is queued');
      for (const c of cues) c.stop();
      for (const r of records) r.stop();
      await Promise.all(consumers.map((c) => c.stop()));
      await Promise.all(schedulers.map((s) => s.stop()));
      await sacn?.close();
      await Promise.all(lights.map((l) => l.close()));
      await presence.stop().catch((e: unknown) => log.warn({ err: (e as Error).message }, 'could not deregister destinations'));
      await opsServer.close();
      await oscQuery?.close();
      for (const r of readers) r.disconnect();
      ops.disconnect();
      log.info({ status: counters.status() }, 'audience-bridge stopped');
    },
  };
}
