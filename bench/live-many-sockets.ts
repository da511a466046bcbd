// Part 2 of bench -- live: many sockets on the gateway and on bare uWebSockets.js, held at the same
// time, each target from generator processes of its own on loopback source addresses (one address
// reaches about 28,000 connections to one port). Page switches alternate between the targets in
// ABBA pairs, so both meet the same machine within seconds; phases minutes apart differed by more
// than the target's margin (the gateway's p99 alone moved from 874 to 1,418 ms between two runs).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { cpuSeconds, percentiles, rssMiB } from './harness.js';
import type { LiveTarget } from './live-servers.js';

const GENERATOR = fileURLToPath(new URL('./live-socket-generator.js', import.meta.url));
const progress = (what: string) => process.stderr.write(`bench: ${what}\n`);
const wsUrl = (http: string) => `${http.replace(/^http/, 'ws')}/live`;
/** how long a page switch is given to reach every socket before its arrivals are read, by default */
const SWITCH_WAIT_MS = 3000;

interface Generator {
  child: ChildProcess;
  next: () => Promise<Record<string, unknown>>;
}

function startGenerator(url: string, tokensFile: string, count: number, address: string, firstToken: number): Generator {
  const child = spawn(process.execPath, ['--max-old-space-size=4096', GENERATOR, wsUrl(url), tokensFile, String(count), address, String(firstToken)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => (waiting.length > 0 ? waiting.shift()!(line) : lines.push(line)));
  const parse = (line: string) => JSON.parse(line) as Record<string, unknown>;
  return { child, next: () => new Promise((r) => (lines.length > 0 ? r(parse(lines.shift()!)) : waiting.push((l) => r(parse(l))))) };
}

/** What many sockets cost one target. */
export interface SocketFigures {
  served: number;
  failed: number;
  openSeconds: number;
  kbPerSocket: number;
  /** share of a core, each process */
  idle: number[];
  /** per switch: frames received, p50, p99, max (ms from the switch) */
  switches: { frames: number; p50: number; p99: number; max: number }[];
  all: { p50: number; p99: number; max: number };
  /** crowd frames a second per socket, and the cores they cost over idle (all processes) */
  crowdHz: number;
  crowdCores: number;
  /** light frames at 10 a second: frames a second per socket, the cores they cost over idle, and per frame the spread of its arrivals across the sockets (ms, sorted) */
  lightHz: number;
  lightCores: number;
  lightSpreads: number[];
}

/** One target's sockets, open from its own generators until `close`. */
export class HeldSockets {
  private constructor(
    readonly target: LiveTarget,
    private readonly generators: Generator[],
    readonly opened: { served: number; failed: number; openSeconds: number; kbPerSocket: number },
  ) {}

  /** `count` sockets, `perGenerator` from each generator, the first on 127.0.0.`firstAddress`. */
  static async open(target: LiveTarget, count: number, perGenerator: number, firstAddress: number): Promise<HeldSockets> {
    const generators: Generator[] = [];
    try {
      const tokensFile = join(mkdtempSync(join(tmpdir(), 'bench-live-')), 'tokens.json');
      writeFileSync(tokensFile, JSON.stringify(target.tokens));
      const rss0 = target.pids.map(rssMiB);
      progress(`${target.name}: opening ${count} sockets`);
      const t0 = Date.now();
      for (let g = 0, left = count; left > 0; g++, left -= perGenerator) generators.push(startGenerator(target.url, tokensFile, Math.min(perGenerator, left), `127.0.0.${firstAddress + g}`, g * perGenerator));
      const opened = await Promise.all(generators.map((g) => g.next()));
      const openSeconds = (Date.now() - t0) / 1000;
      const served = opened.reduce((n, o) => n + Number(o.opened), 0);
      await sleep(3000); // settle: garbage collected, buffers returned
      const kbPerSocket = ((target.pids.map(rssMiB).reduce((a, b) => a + b, 0) - rss0.reduce((a, b) => a + b, 0)) * 1024) / served;
      return new HeldSockets(target, generators, { served, failed: opened.reduce((n, o) => n + Number(o.failed), 0), openSeconds, kbPerSocket });
    } catch (e) {
      for (const g of generators) g.child.kill('SIGKILL');
      throw e;
    }
  }

  /** The arrival times of the page frames that showed `pageId`, the crowd frames, and per light frame its first and last arrival and sockets, since the last report. */
  async report(pageId: string): Promise<{ arrivals: number[]; crowd: number; lights: Map<string, [number, number, number]> }> {
    for (const g of this.generators) g.child.stdin!.write(`report ${pageId}\n`);
    const reports = await Promise.all(this.generators.map((g) => g.next()));
    const lights = new Map<string, [number, number, number]>();
    for (const r of reports) {
      for (const [id, [first, last, n]] of r.lights as [string, [number, number, number]][]) {
        const seen = lights.get(id);
        lights.set(id, seen ? [Math.min(seen[0], first), Math.max(seen[1], last), seen[2] + n] : [first, last, n]);
      }
    }
    return { arrivals: reports.flatMap((r) => r.arrivals as number[]), crowd: reports.reduce((n, r) => n + Number(r.crowd), 0), lights };
  }

  /** One page switch, timed from the moment it returns: each socket's latency, sorted. */
  async switchTo(pageId: string, waitMs = SWITCH_WAIT_MS): Promise<number[]> {
    await this.report('none'); // start clean
    await this.target.switchTo(pageId);
    const at = Date.now();
    await sleep(waitMs);
    return (await this.report(pageId)).arrivals.map((t) => t - at).sort((a, b) => a - b);
  }

  close(): void {
    for (const g of this.generators) g.child.kill('SIGKILL');
  }
}

/**
 * The figures of every held target: idle CPU (all measured at once), a warm-up page switch on
 * each, then `switches` page switches each, alternating between the targets (ABBA), then crowd
 * values at 4 Hz and light frames at 10 a second, one target after another while the others hold
 * their sockets idle.
 */
export async function measureSockets(held: readonly HeldSockets[], o: { seconds: number; switches: number; switchWaitMs?: number }): Promise<SocketFigures[]> {
  progress(`idle ${o.seconds} s: ${held.map((h) => h.target.name).join(', ')}`);
  const idle0 = held.map((h) => h.target.pids.map(cpuSeconds));
  await sleep(o.seconds * 1000);
  const idle = held.map((h, t) => h.target.pids.map((p, i) => (cpuSeconds(p) - idle0[t]![i]!) / o.seconds));
  // one switch on each that is not counted: the first runs code paths not yet compiled, on both sides
  progress('a warm-up page switch on each target');
  for (const h of held) await h.switchTo('encore', o.switchWaitMs);
  const switches: SocketFigures['switches'][] = held.map(() => []);
  const latencies: number[][] = held.map(() => []);
  for (let s = 0; s < o.switches; s++) {
    const pageId = s % 2 === 0 ? 'main' : 'encore';
    progress(`page switch ${s + 1} of ${o.switches} to ${pageId}, each target in turn`);
    const order = held.map((_, t) => t);
    if (s % 2 === 1) order.reverse();
    for (const t of order) {
      const times = await held[t]!.switchTo(pageId, o.switchWaitMs);
      latencies[t]!.push(...times);
      switches[t]!.push({ frames: times.length, ...percentiles(times) });
    }
  }
  const figures: SocketFigures[] = [];
  for (const [t, h] of held.entries()) {
    progress(`${h.target.name}: crowd at 4 Hz, ${o.seconds} s`);
    await h.target.switchTo('main');
    await sleep(2000);
    await h.report('none');
    const stopCrowd = h.target.crowd();
    const crowd0 = h.target.pids.map(cpuSeconds);
    await sleep(o.seconds * 1000);
    const crowdCores = h.target.pids.reduce((n, p, i) => n + (cpuSeconds(p) - crowd0[i]!) / o.seconds, 0) - idle[t]!.reduce((a, b) => a + b, 0);
    await stopCrowd();
    const { crowd } = await h.report('none');
    progress(`${h.target.name}: light frames at 10 a second, ${o.seconds} s`);
    const stopLight = h.target.light();
    const light0 = h.target.pids.map(cpuSeconds);
    await sleep(o.seconds * 1000);
    const lightCores = h.target.pids.reduce((n, p, i) => n + (cpuSeconds(p) - light0[i]!) / o.seconds, 0) - idle[t]!.reduce((a, b) => a + b, 0);
    await stopLight();
    await sleep(1000); // the last frames arrive
    const { lights } = await h.report('none');
    const delivered = [...lights.values()].reduce((n, [, , k]) => n + k, 0);
    figures.push({
      ...h.opened,
      idle: idle[t]!,
      switches: switches[t]!,
      all: percentiles(latencies[t]!.sort((a, b) => a - b)),
      crowdHz: crowd / h.opened.served / o.seconds,
      crowdCores,
      lightHz: delivered / h.opened.served / o.seconds,
      lightCores,
      // frames every socket got (a frame sent as the window closed may have reached only some)
      lightSpreads: [...lights.values()].filter(([, , k]) => k >= h.opened.served).map(([first, last]) => last - first).sort((a, b) => a - b),
    });
  }
  return figures;
}
