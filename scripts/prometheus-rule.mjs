// Writes deploy/kubernetes/monitoring/prometheusrule.yaml from deploy/prometheus/alerts.yml: the same
// rules, as the Prometheus Operator's PrometheusRule, so the rules promtool tests are the rules a
// cluster loads. `node scripts/prometheus-rule.mjs` rewrites it; `--check` exits 1 if it differs.
import { readFileSync, writeFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';

const ALERTS = 'deploy/prometheus/alerts.yml';
const OUT = 'deploy/kubernetes/monitoring/prometheusrule.yaml';

export function prometheusRule(alertsText) {
  const { groups } = parse(alertsText);
  const rule = { apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule', metadata: { name: 'audience-control' }, spec: { groups } };
  return `# Made by scripts/prometheus-rule.mjs from deploy/prometheus/alerts.yml (promtool tests those rules):
# do not edit; change alerts.yml and run node scripts/prometheus-rule.mjs.
${stringify(rule, { lineWidth: 0 })}`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const text = prometheusRule(readFileSync(ALERTS, 'utf8'));
  if (process.argv.includes('--check')) {
    if (readFileSync(OUT, 'utf8') !== text) {
      console.error(`${OUT} is not what ${ALERTS} makes: run node scripts/prometheus-rule.mjs`);
      process.exit(1);
    }
  } else writeFileSync(OUT, text);
}
