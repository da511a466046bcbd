// How many of each part a show needs for 10k to 1M phones, computed from the per-unit figures one
// `npm run bench` measured (its result's `raw`), never written by hand: `npm run bench` and
// `npm run bench:table` write the table into docs/operations.md.

/** What one unit costs or carries, as the suite measured it. */
export interface UnitFigures {
  /** gateway CPU µs per action sent over the live channel */
  liveActionCpuUs: number;
  /** gateway CPU µs per crowd frame delivered to a socket */
  crowdFrameCpuUs: number;
  /** resident memory growth per open live socket, bytes */
  bytesPerSocket: number;
  /** a gateway process's resident memory with `tokensCached` distinct tokens cached, MiB */
  gatewayRssMiB: number;
  tokensCached: number;
  /** entries a second one Redis master appends to one layout's stream */
  redisEntriesPerSec: number;
  /** OSC messages a second one bridge sends (the slowest of its measured drains) */
  bridgeMessagesPerSec: number;
  /** crowd summaries a second one gateway process writes for a busy layout */
  summariesPerSecPerProcess: number;
  /** bytes an entry takes on the bridge's Redis link (RESP, as XREADGROUP returns it) */
  actionEntryBytes: number;
  summaryEntryBytes: number;
}

/** What the table assumes; docs/operations.md repeats each beside the table. */
export const SIZING = {
  phones: [10_000, 50_000, 200_000, 1_000_000],
  /** the peak: every phone acts once a second, all at once (a vote called, a drop) */
  actionsPerPhonePerSecond: 1,
  /** crowd frames a second to every socket (the live channel's crowd rate) */
  crowdHz: 4,
  /** LIVE_MAX_SOCKETS' default: a process's socket cap, within 20,000 open files */
  maxSocketsPerProcess: 15_000,
  /** the share of a core planned for actions and crowd frames; page switches, reconnects and GC take the rest */
  plannedCore: 0.7,
  /** Redis masters and bridges planned at this share of what one carried */
  headroom: 0.5,
} as const;

export interface SizingRow {
  phones: number;
  processes: number;
  socketsPerProcess: number;
  memoryMiB: number;
  coresPerProcess: number;
  aggregated: { entriesPerSec: number; redisShare: number; bridges: number; mbps: number };
  plain: { entriesPerSec: number; redisShare: number; bridges: number; mbps: number };
}

/** The figures a result's `raw` must hold, or an error naming the first one missing. */
export function unitFigures(raw: Record<string, unknown>): UnitFigures {
  const units = raw.units as Partial<UnitFigures> | undefined;
  const names: (keyof UnitFigures)[] = ['liveActionCpuUs', 'crowdFrameCpuUs', 'bytesPerSocket', 'gatewayRssMiB', 'tokensCached', 'redisEntriesPerSec', 'bridgeMessagesPerSec', 'summariesPerSecPerProcess', 'actionEntryBytes', 'summaryEntryBytes'];
  for (const name of names) {
    const v = units?.[name];
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new Error(`the bench result has no per-unit figure ${name}: run npm run bench`);
  }
  return units as UnitFigures;
}

/** Processes, memory and cores, Redis, bridges and the venue link for `phones`. */
export function size(u: UnitFigures, phones: number): SizingRow {
  const perSocketCoreUs = SIZING.actionsPerPhonePerSecond * u.liveActionCpuUs + SIZING.crowdHz * u.crowdFrameCpuUs;
  const socketsByCpu = Math.floor((SIZING.plannedCore * 1e6) / perSocketCoreUs);
  const capacity = Math.min(SIZING.maxSocketsPerProcess, socketsByCpu);
  // one process more than the sockets need, so that one draining or lost leaves room for its phones
  const processes = Math.ceil(phones / capacity) + 1;
  const socketsPerProcess = Math.ceil(phones / (processes - 1));
  const memoryMiB = u.gatewayRssMiB + (socketsPerProcess * u.bytesPerSocket) / 2 ** 20;
  const coresPerProcess = (socketsPerProcess * perSocketCoreUs) / 1e6;
  const side = (entriesPerSec: number, entryBytes: number) => ({
    entriesPerSec,
    redisShare: entriesPerSec / u.redisEntriesPerSec,
    bridges: Math.ceil(entriesPerSec / (SIZING.headroom * u.bridgeMessagesPerSec)),
    mbps: (entriesPerSec * entryBytes * 8) / 1e6,
  });
  return {
    phones,
    processes,
    socketsPerProcess,
    memoryMiB,
    coresPerProcess,
    aggregated: side(processes * u.summariesPerSecPerProcess, u.summaryEntryBytes),
    plain: side(phones * SIZING.actionsPerPhonePerSecond, u.actionEntryBytes),
  };
}

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const mbps = (n: number) => (n < 10 ? n.toFixed(1) : int(n));

/** "standalone (x % of one master)", or how many masters, each holding its share of the crowd's layouts. */
function redis(share: number): string {
  const pct = `${int(share * 100)} % of one master`;
  if (share <= SIZING.headroom) return `one server (${pct})`;
  return `Cluster, ${Math.ceil(share / SIZING.headroom)} masters, the crowd split over as many layouts (${pct})`;
}

function bridges(n: number): string {
  return n === 1 ? '1 (+1 standby)' : `${n}, the crowd split over as many layouts`;
}

export const SIZING_START = '<!-- sizing: made by npm run bench:table from bench/results; do not edit -->';
export const SIZING_END = '<!-- end of sizing -->';

/** The sizing table in Markdown, naming the figures it came from and the commit measured. */
export function sizingTable(u: UnitFigures, source: { file: string; commit?: string; startedAt: string }): string {
  const rows = SIZING.phones.map((p) => size(u, p));
  return [
    SIZING_START,
    `From \`${source.file}\` (measured ${source.startedAt.slice(0, 10)}${source.commit ? ` at commit ${source.commit}` : ''}): ` +
      `${u.liveActionCpuUs.toFixed(1)} µs of gateway CPU per action over the live channel, ${u.crowdFrameCpuUs.toFixed(1)} µs per crowd frame delivered, ` +
      `${(u.bytesPerSocket / 1024).toFixed(1)} KiB per open socket, ${int(u.gatewayRssMiB)} MiB resident with ${int(u.tokensCached)} tokens cached; ` +
      `one Redis master ${int(u.redisEntriesPerSec)} entries/s into one stream; one bridge ${int(u.bridgeMessagesPerSec)} OSC messages/s; ` +
      `${int(u.summariesPerSecPerProcess)} crowd summaries/s per gateway process; ${int(u.actionEntryBytes)} B per action entry and ${int(u.summaryEntryBytes)} B per summary on the bridge's Redis link.`,
    '',
    '| phones | gateway processes | sockets per process | memory per process | cores per process | crowd aggregated: Redis | bridges | venue link | plain controls: Redis | bridges | venue link |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map((r) =>
      `| ${int(r.phones)} | ${r.processes} | ${int(r.socketsPerProcess)} | ${int(r.memoryMiB)} MiB | ${r.coresPerProcess.toFixed(2)} | ` +
      `${redis(r.aggregated.redisShare)}, ${int(r.aggregated.entriesPerSec)} entries/s | ${bridges(r.aggregated.bridges)} | ${mbps(r.aggregated.mbps)} Mbit/s | ` +
      `${redis(r.plain.redisShare)}, ${int(r.plain.entriesPerSec)} entries/s | ${bridges(r.plain.bridges)} | ${mbps(r.plain.mbps)} Mbit/s |`),
    SIZING_END,
  ].join('\n');
}
