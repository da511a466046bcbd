// A scenario file: read, checked against schemas/loadtest-scenario.schema.json (defaults filled in),
// its thresholds parsed, and its phases checked for what a schema cannot say. Any fault is a
// configuration error that names the field.
import { readFileSync } from 'node:fs';
import { loadtestScenario } from '../schemas/generated/defaults.js';
import { describeFirstError, type Validator } from '../schemas/validators.js';
import { LoadtestError } from './errors.js';
import { parseThresholds, type Threshold } from './thresholds.js';

export interface Phase {
  name: string;
  durationS: number;
  arrivalsPerS?: number;
  actionsPerPhonePerS?: number;
  onPage?: string;
  share: number;
  actWithinS: number;
  reconnectWithinS?: number;
  jitter: boolean;
}

export interface Scenario {
  layoutId: string;
  seed: number;
  httpShare: number;
  renewEveryS?: number;
  mintPerSecond: number;
  maxLagMs: number;
  phases: Phase[];
  thresholds: Record<string, string>;
}

const validate = loadtestScenario as Validator<Scenario>;

/** A scenario from its JSON text (`source` names it in errors), with its parsed thresholds. */
export function parseScenario(text: string, source: string): { scenario: Scenario; thresholds: Threshold[] } {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new LoadtestError('config', `${source}: not JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  if (!validate(data)) throw new LoadtestError('config', `${source}: ${describeFirstError(validate.errors, 'scenario')}`);
  for (const [i, p] of data.phases.entries()) {
    const behaviours = [p.onPage !== undefined, p.reconnectWithinS !== undefined].filter(Boolean).length;
    if (behaviours > 1) throw new LoadtestError('config', `${source}: scenario.phases.${i} ("${p.name}") has both onPage and reconnectWithinS; give each its own phase`);
    if (p.reconnectWithinS !== undefined && p.reconnectWithinS > p.durationS) throw new LoadtestError('config', `${source}: scenario.phases.${i}.reconnectWithinS is longer than the phase (durationS ${p.durationS})`);
  }
  return { scenario: data, thresholds: parseThresholds(data.thresholds) };
}

export function loadScenario(file: string): { scenario: Scenario; thresholds: Threshold[] } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new LoadtestError('config', `${file}: cannot be read (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  return parseScenario(text, file);
}

/**
 * Part `k` of `n` of a crowd (1-based), for n generator processes or machines that play one show
 * together: each plays 1/n of the arrivals with a seed of its own (other phones, the same model)
 * and mints at 1/n of the rate, so the key's budget is shared. Their results merge into the show's.
 */
export function partOf(scenario: Scenario, part: string): Scenario {
  const m = /^(\d+)\/(\d+)$/.exec(part);
  const k = Number(m?.[1]);
  const n = Number(m?.[2]);
  if (!m || !(n >= 1 && k >= 1 && k <= n)) throw new LoadtestError('config', `--part ${part}: K/N with 1 <= K <= N, for example 2/3`);
  return {
    ...scenario,
    seed: (scenario.seed + (k - 1) * 1_000_003) >>> 0,
    mintPerSecond: scenario.mintPerSecond / n,
    phases: scenario.phases.map((p) => (p.arrivalsPerS === undefined ? p : { ...p, arrivalsPerS: p.arrivalsPerS / n })),
  };
}
