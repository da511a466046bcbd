// Fault tests report what they measured: each figure is printed and kept in test-artifacts/faults.json.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';

const FILE = 'test-artifacts/faults.json';

export function recordFigure(name: string, value: number, unit: string, bound: string): void {
  mkdirSync('test-artifacts', { recursive: true });
  const all = existsSync(FILE) ? (JSON.parse(readFileSync(FILE, 'utf8')) as Record<string, unknown>) : {};
  all[name] = { value: Math.round(value * 10) / 10, unit, bound, at: new Date().toISOString() };
  writeFileSync(FILE, `${JSON.stringify(all, null, 2)}\n`);
  console.info(`figure: ${name} = ${Math.round(value * 10) / 10} ${unit} (bound: ${bound})`);
}
