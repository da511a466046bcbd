// The figures bench -- live prints (bench/live-channel.ts) and `npm run bench` reads back from its
// output (bench/run.ts). The action table is written and read here, in one place, so a column
// added to one side cannot leave the other reading nothing.

/** One row of the action table: a path and what its server spent on it. */
export interface ActionRow {
  path: string;
  perSecond: number;
  /** share of a core */
  cpuShare: number;
  usPerAction: number;
  /** of it in the kernel; only where it is measured (the socket rows) */
  systemUsPerAction?: number;
}

/** The paths of the action table, each row's name starts with one of these. */
export const ACTION_PATH = {
  bareHttp: 'bare uWS HTTP reply',
  bareSocket: 'bare uWS socket ack',
  /** the bare ack that first appends each frame to a Redis stream (bench/live-bare-store.ts) */
  storingSocket: 'storing floor',
  post: 'POST /action',
  socket: 'action frame over the live channel',
} as const;

export function actionTable(rows: readonly ActionRow[]): string[] {
  return [
    '| path | actions/s | server CPU (share of a core) | server CPU µs/action | of it in the kernel |',
    '|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.path} | ${Math.round(r.perSecond)} | ${r.cpuShare.toFixed(2)} | ${r.usPerAction.toFixed(1)} | ${r.systemUsPerAction?.toFixed(1) ?? ''} |`),
  ];
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** The figures `npm run bench` takes from the live scenario's output; a figure it printed none of is NaN or undefined. */
export function liveFigures(live: string) {
  const usPer = (path: string) => Number(new RegExp(`^\\| ${escape(path)}[^|]* \\| \\d+ \\| [\\d.]+ \\| ([\\d.]+) \\| [\\d.]* ?\\|$`, 'm').exec(live)?.[1]);
  return {
    postUs: usPer(ACTION_PATH.post),
    socketUs: usPer(ACTION_PATH.socket),
    bareSocketUs: usPer(ACTION_PATH.bareSocket),
    storingSocketUs: usPer(ACTION_PATH.storingSocket),
    kib: /^\| memory per socket[^|]*\| ([\d.]+) KB \| ([\d.]+) KB/m.exec(live)?.slice(1).map(Number),
    crowdUs: /^\| crowd at 4 Hz: µs of CPU per frame delivered \| ([\d.]+) \| ([\d.]+) \|/m.exec(live)?.slice(1).map(Number),
    switchP99: /^\| page switch, all: p50 \/ p99 \/ max ms \| [\d.]+ \/ ([\d.]+) \/ [\d.]+ \| [\d.]+ \/ ([\d.]+) \/ [\d.]+/m.exec(live)?.slice(1).map(Number),
    sockets: Number(/^(\d+) sockets open on the gateway/m.exec(live)?.[1]),
  };
}
