// Reading a process's Prometheus text: one sample by its exact series, and the bridge's counter identity.

export const scrape = async (port: number): Promise<string> => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();

/** The value of one series, written exactly as in the exposition (`name{label="v",...}`); NaN when absent. */
export const sample = (text: string, series: string): number =>
  Number(new RegExp(`^${series.replace(/[{}"=,]/g, (c) => `\\${c}`)} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);

/** A layout's entry outcomes from the bridge's metrics, and whether they add up to what it read. */
export function bridgeOutcomes(text: string, layoutId: string): { read: number; sent: number; deadLettered: number; summaries: number; droppedStale: number; pending: number; sum: number } {
  const at = (name: string, extra = '') => sample(text, `audience_bridge_${name}{layout="${layoutId}"${extra}}`);
  const read = at('entries_read_total');
  const sent = at('entries_sent_total');
  const deadLettered = at('dead_lettered_total');
  const pending = at('entries_pending');
  const summaries = at('crowd_summaries_total');
  const droppedStale = at('dropped_stale_total');
  const sum = sent + at('coalesced_total') + at('duplicates_total') + deadLettered + droppedStale + at('entries_lost_total', ',reason="trimmed"') + summaries + pending;
  return { read, sent, deadLettered, summaries, droppedStale, pending, sum };
}
