// The SRE's Prometheus files in deploy/: the alerting rules pass promtool's checks and unit tests
// (deploy/prometheus/alerts.test.yml: each alert fires on its series and stays quiet on others),
// and every metric an alert or a Grafana panel names is one a real gateway (with workers) or a
// real bridge exposes on its /metrics, so a renamed metric cannot leave a silent alert or an
// empty panel behind.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_LAYOUT } from '../helpers/gateway.js';
import { configFile, spawnBridge, stopProcess } from '../helpers/bridge.js';
import { seedLayout, spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { scrape } from '../helpers/metrics.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const run = promisify(execFile);
const ALERTS = 'deploy/prometheus/alerts.yml';
const DASHBOARD = 'deploy/grafana/audience-control.json';
const REPO = resolve('.');
/** Series that come from Prometheus and the blackbox exporter, not from the processes. */
const FROM_PROMETHEUS = new Set(['up', 'probe_success']);

const redis = useRedis();
const prefix = randomPrefix();
const children: ChildProcess[] = [];
let gateway: GatewayProcess;
let bridgeOps: number;

beforeAll(async () => {
  const { admin } = await seedLayout(redis.get().server.url, prefix, DEMO_LAYOUT);
  admin.disconnect();
  gateway = await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: prefix, GATEWAY_WORKERS: '2' });
  children.push(gateway.child);
  const file = configFile({ redisUrl: redis.get().server.url, prefix, bridgeId: 'prom', layouts: [{ layoutId: DEMO_LAYOUT.layoutId, targets: [{ host: '127.0.0.1', port: 9 }] }] });
  const bridge = await spawnBridge(['--config', file], { LOG_LEVEL: 'info' });
  children.push(bridge.child);
  bridgeOps = Number(/"opsPort":(\d+)/.exec(bridge.output())?.[1]);
}, 60_000);
afterAll(async () => {
  for (const c of children) await stopProcess(c, 'SIGKILL');
});

/** The metric names an exposition declares (# TYPE lines), with a histogram's _bucket, _sum and _count. */
function exposed(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name! + s);
  }
  return names;
}

/** The metric names a PromQL expression names (audience_* and Prometheus's own). */
const named = (expr: string) => [...expr.matchAll(/\b(audience_[a-z_]+|up|probe_success)\b(?=\s*[{[)\s]|$)/g)].map((m) => m[1]!);

describe('deploy/prometheus and deploy/grafana', () => {
  it('the alerting rules pass promtool check rules and their unit tests', async () => {
    const check = await run('promtool', ['check', 'rules', ALERTS]);
    expect(check.stdout).toMatch(/SUCCESS: \d+ rules found/);
    const tests = await run('promtool', ['test', 'rules', 'deploy/prometheus/alerts.test.yml']);
    expect(tests.stdout).toContain('SUCCESS');
  });

  it('every alert has a runbook (its row in docs/operations.md), a unit test that fires it and one that keeps it quiet', () => {
    const rules = (parse(readFileSync(ALERTS, 'utf8')) as { groups: { rules: { alert: string; annotations: Record<string, string> }[] }[] }).groups.flatMap((g) => g.rules);
    expect(rules.length).toBeGreaterThanOrEqual(23);
    const operations = readFileSync('docs/operations.md', 'utf8');
    const tests = (parse(readFileSync('deploy/prometheus/alerts.test.yml', 'utf8')) as { tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[] }).tests.flatMap((t) => t.alert_rule_test);
    for (const { alert, annotations } of rules) {
      const anchor = /^docs\/operations\.md#([a-z0-9-]+)$/.exec(annotations.runbook_url ?? '')?.[1];
      expect(anchor, `${alert}: runbook_url ${annotations.runbook_url}`).toBeDefined();
      expect(operations, `${alert}: docs/operations.md has no anchor ${anchor}`).toContain(`<a id="${anchor}"></a>\`${alert}\``);
      expect(tests.some((t) => t.alertname === alert && t.exp_alerts.length > 0), `${alert}: a test that fires it`).toBe(true);
      expect(tests.some((t) => t.alertname === alert && t.exp_alerts.length === 0), `${alert}: a test that keeps it quiet`).toBe(true);
    }
  });

  it('every metric an alert or a panel names is exposed by a real gateway or bridge', async () => {
    const names = new Set([...exposed(await scrape(gateway.opsPort)), ...exposed(await scrape(bridgeOps))]);
    const exprs = [...readFileSync(ALERTS, 'utf8').matchAll(/^\s+expr: (.+)$/gm)].map((m) => m[1]!);
    const panels = (JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: { title: string; targets?: { expr: string }[] }[] }).panels;
    for (const p of panels) for (const t of p.targets ?? []) exprs.push(t.expr);
    expect(exprs.length).toBeGreaterThan(40);
    const missing = [...new Set(exprs.flatMap(named))].filter((n) => !FROM_PROMETHEUS.has(n) && !names.has(n));
    expect(missing).toEqual([]);
    // and the dashboard shows each part the SREs watch
    const titles = panels.map((p) => p.title.toLowerCase()).join(' | ');
    for (const part of ['requests', 'latency', 'live sockets', 'crowd', 'redis', 'lag', 'lateness', 'displays', 'event-loop lag', 'cpu', 'memory', 'up and ready', 'opened', 'refused, by code', 'send errors']) expect(titles).toContain(part);
    // an on-call narrows it to instances and layouts: every query of the processes' series takes the instance variable
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { templating: { list: { name: string; query?: { query: string } }[] } };
    expect(dashboard.templating.list.map((v) => v.name)).toEqual(['datasource', 'instance', 'layout']);
    for (const p of panels) for (const t of p.targets ?? []) for (const [selector] of t.expr.matchAll(/\baudience_[a-z0-9_]+\{[^}]*\}/g)) expect(selector, `${p.title}: ${t.expr}`).toContain('instance=~"$instance"');
    for (const p of panels) for (const t of p.targets ?? []) expect(t.expr, `${p.title}: a series outside a selector`).not.toMatch(/\baudience_[a-z0-9_]+(?![a-z0-9_{])/);
  });

  it("the dashboard is a Grafana dashboard model (@grafana/schema's Dashboard type, strict tsc); a misspelt field is not", async () => {
    // the JSON as an object literal typed Dashboard: every field name, enum and required field is checked
    const dir = mkdtempSync(join(tmpdir(), 'ac-grafana-'));
    try {
      const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Record<string, unknown>[] };
      const check = async (model: unknown) => {
        writeFileSync(join(dir, 'check.ts'), `import type { Dashboard } from '@grafana/schema';\nexport const dashboard: Dashboard = ${JSON.stringify(model, null, 1)};\n`);
        writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { strict: true, noEmit: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', types: [], typeRoots: [], baseUrl: '.', paths: { '@grafana/schema': [join(REPO, 'node_modules/@grafana/schema')] }, skipLibCheck: true }, files: ['check.ts'] }));
        return run(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', dir], { timeout: 120_000 }).then(() => 'ok', (e: Error & { stdout?: string }) => e.stdout ?? e.message);
      };
      expect(await check(dashboard)).toBe('ok');
      const misspelt = structuredClone(dashboard);
      misspelt.panels[0]!.gridpos = misspelt.panels[0]!.gridPos;
      delete misspelt.panels[0]!.gridPos;
      expect(await check(misspelt)).toMatch(/gridpos/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
