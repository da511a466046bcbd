// deploy/kubernetes, offline (no cluster runs here): every manifest of the base and the example
// overlay, and every object kustomize builds of them and of the monitoring set, validates against
// the Kubernetes and Prometheus Operator schemas (npm kubernetes-models); the kustomizations
// name files that exist and objects the base has; and the manifests agree with the gateway: every
// ConfigMap key is one of its settings with a value it accepts, the container ports and the probes
// are the ones those settings open, the Service keeps the ops port off, the NetworkPolicy lets
// both ports in, and the grace period outlasts the preStop pause and the live channel's drain. A
// real gateway process started with the ConfigMap's settings answers the probes' paths.
import { execFile, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { dirname, join } from 'node:path';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import { PodMonitor, PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { parse, parseAllDocuments } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { configProperties, loadConfig } from '../../gateway/config.js';
import { freePort } from '../../dev/redis-server.js';
import { stopProcess } from '../helpers/bridge.js';
import { seedLayout, spawnGateway } from '../helpers/gateway-process.js';
import { DEMO_LAYOUT } from '../helpers/gateway.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const BASE = 'deploy/kubernetes/base';
const OVERLAY = 'deploy/kubernetes/overlays/example';
const KINDS: Record<string, new (o: any) => { validate(): void }> = { Deployment, ConfigMap, Secret, Service, ServiceAccount, PodDisruptionBudget, HorizontalPodAutoscaler, NetworkPolicy, Ingress };
const MONITORING_KINDS: Record<string, new (o: any) => { validate(): void }> = { PodMonitor, PrometheusRule };
const SECRET_EXAMPLE = 'deploy/kubernetes/secret.example.yaml';
const MONITORING = 'deploy/kubernetes/monitoring';
const ADAPTER_RULES = join(MONITORING, 'prometheus-adapter-rules.yaml');
const ALERTS = 'deploy/prometheus/alerts.yml';
const run = promisify(execFile);
const CONTROLLER_CONFIG = 'deploy/kubernetes/ingress-nginx/controller-configmap.yaml';

/** A parsed manifest or kustomization (its fields are checked by the tests, not by this type). */
interface Manifest {
  kind: string;
  metadata: { name: string };
  [field: string]: any;
}

// YAML 1.1, as Kubernetes reads manifests: 0440 is octal there
const read = (file: string) => parse(readFileSync(file, 'utf8'), { version: '1.1' }) as Manifest;
const kustomization = (dir: string) => read(join(dir, 'kustomization.yaml'));
const base = (): Manifest[] => (kustomization(BASE).resources as string[]).map((f) => read(join(BASE, f)));
const one = (kind: string): Manifest => base().find((o) => o.kind === kind)!;
/** The job label the PodMonitor gives the gateways' series. */
const podMonitorJob = (): string => (read(join(MONITORING, 'podmonitor.yaml')).spec.podMetricsEndpoints[0].relabelings as { targetLabel: string; replacement: string }[]).find((r) => r.targetLabel === 'job')!.replacement;

const redis = useRedis();
const children: ChildProcess[] = [];
afterAll(async () => {
  for (const c of children) await stopProcess(c, 'SIGKILL');
});

describe('deploy/kubernetes', () => {
  it('every manifest validates against the Kubernetes schemas; a wrong one does not', () => {
    // the overlay's patches that are whole objects (a ConfigMap's data); the Deployment patch is checked below
    const patches = (kustomization(OVERLAY).patches as { path: string }[]).map((p) => read(join(OVERLAY, p.path))).filter((o) => o.kind !== 'Deployment');
    const objects: Manifest[] = [...base(), ...patches, read(CONTROLLER_CONFIG), read(SECRET_EXAMPLE)];
    expect(objects.map((o) => o.kind).sort()).toEqual(['ConfigMap', 'ConfigMap', 'ConfigMap', 'Deployment', 'HorizontalPodAutoscaler', 'Ingress', 'NetworkPolicy', 'PodDisruptionBudget', 'Secret', 'Service', 'ServiceAccount']);
    for (const o of objects) expect(() => new KINDS[o.kind]!(o).validate(), `${o.kind} ${o.metadata?.name}`).not.toThrow();
    const wrong = structuredClone(one('Deployment'));
    wrong.spec.template.spec.containers[0].ports[0].containerPort = '8080';
    expect(() => new Deployment(wrong).validate()).toThrow(/containerPort must be integer/);
  });

  it('kustomize (kubectl kustomize) builds the base, the example overlay and the monitoring set, and every object each build makes validates against the Kubernetes and Prometheus Operator schemas', async () => {
    // kubectl's own kustomize (v5 in kubectl 1.32 of this machine's google-cloud-cli; Debian's kubectl 1.20 is too old for `labels`)
    const kubectl = (dir: string) => run('kubectl', ['kustomize', dir], { timeout: 60_000 }).catch((e: NodeJS.ErrnoException) => {
      throw e.code === 'ENOENT' ? new Error('kubectl is not on PATH: the kustomize build needs kubectl 1.27 or later (kustomize v5)') : e;
    });
    const build = async (dir: string) => parseAllDocuments((await kubectl(dir)).stdout, { version: '1.1' }).map((d) => d.toJS() as Manifest);
    const [built, overlay, monitoring] = await Promise.all([build(BASE), build(OVERLAY), build(MONITORING)]);
    const validate = (o: Manifest) => new (KINDS[o.kind] ?? MONITORING_KINDS[o.kind])!(o).validate();
    for (const o of [...built, ...overlay, ...monitoring]) expect(() => validate(o), `${o.kind} ${o.metadata.name}`).not.toThrow();
    expect(overlay.map((o) => o.kind).sort()).toEqual(built.map((o) => o.kind).sort());
    expect(monitoring.map((o) => o.kind).sort()).toEqual(['PodMonitor', 'PrometheusRule']);
    // the overlay's build is what the cluster gets: its namespace, the image by digest, the named Secret, its settings
    const image = (kustomization(OVERLAY).images as { newName: string; digest: string }[])[0]!;
    expect(overlay.every((o) => (o.metadata as { namespace?: string }).namespace === kustomization(OVERLAY).namespace)).toBe(true);
    const deployment = overlay.find((o) => o.kind === 'Deployment')!;
    const pod = deployment.spec.template.spec;
    expect(pod.containers[0].image).toBe(`${image.newName}@${image.digest}`);
    const secretName = read(join(OVERLAY, 'secret-name.yaml')).spec.template.spec.volumes[0].secret.secretName;
    expect(pod.volumes.find((v: { name: string }) => v.name === 'kek').secret.secretName).toBe(secretName);
    expect(pod.containers[0].env.find((e: { name: string }) => e.name === 'REDIS_URL').valueFrom.secretKeyRef.name).toBe(secretName);
    expect(deployment.spec.replicas).toBeUndefined();
    expect(overlay.find((o) => o.kind === 'ConfigMap')!.data).toMatchObject(read(join(OVERLAY, 'settings.yaml')).data);
    // a wrong object in a build is caught
    const wrong = structuredClone(monitoring.find((o) => o.kind === 'PodMonitor')!);
    wrong.spec.podMetricsEndpoints[0].interval = 30;
    expect(() => validate(wrong)).toThrow();
  });

  it('the kustomizations name files that exist, and the overlay names what the base has', () => {
    for (const dir of [BASE, OVERLAY]) {
      const k = kustomization(dir);
      expect(k.apiVersion).toBe('kustomize.config.k8s.io/v1beta1');
      for (const r of k.resources as string[]) expect(existsSync(join(dir, r)), `${dir}: ${r}`).toBe(true);
      for (const p of (k.patches ?? []) as { path: string }[]) expect(existsSync(join(dir, p.path)), `${dir}: ${p.path}`).toBe(true);
    }
    const overlay = kustomization(OVERLAY);
    const container = one('Deployment').spec.template.spec.containers[0];
    expect(overlay.images.map((i: { name: string }) => i.name)).toEqual([container.image.split(':')[0]]);
    // the image pinned by digest, not a tag that can be moved
    for (const image of overlay.images as { digest?: string; newTag?: string }[]) expect([image.digest, image.newTag]).toEqual([expect.stringMatching(/^sha256:[0-9a-f]{64}$/), undefined]);
    // the pod count is the HorizontalPodAutoscaler's alone: neither the Deployment nor the overlay sets one
    expect(one('Deployment').spec.replicas).toBeUndefined();
    expect(overlay.replicas).toBeUndefined();
    for (const p of overlay.patches as { path: string }[]) {
      const patch = read(join(OVERLAY, p.path));
      expect(base().some((o) => o.kind === patch.kind && o.metadata.name === patch.metadata.name), p.path).toBe(true);
    }
  });

  it('applies no Secret (an apply never overwrites the one a secret store made): the overlay names it, the same in both places the pod reads it', () => {
    for (const dir of [BASE, OVERLAY]) expect(JSON.stringify(kustomization(dir)), dir).not.toMatch(/secret\.(example\.)?yaml/);
    expect(base().filter((o) => o.kind === 'Secret')).toEqual([]);
    const patch = (kustomization(OVERLAY).patches as { path: string }[]).map((p) => read(join(OVERLAY, p.path))).find((o) => o.kind === 'Deployment')!;
    expect(patch.metadata.name).toBe(one('Deployment').metadata.name);
    const pod = patch.spec.template.spec;
    const names = [pod.containers[0].env.find((e: { name: string }) => e.name === 'REDIS_URL').valueFrom.secretKeyRef.name, pod.volumes.find((v: { name: string }) => v.name === 'kek').secret.secretName];
    expect(new Set(names).size).toBe(1);
    // the patch reaches what the base has: its container, its REDIS_URL, its kek volume
    const basePod = one('Deployment').spec.template.spec;
    expect(basePod.containers[0].name).toBe(pod.containers[0].name);
    expect(basePod.containers[0].env.some((e: { name: string }) => e.name === 'REDIS_URL')).toBe(true);
    expect(basePod.volumes.some((v: { name: string }) => v.name === 'kek')).toBe(true);
    // the example Secret has the keys the pod reads
    expect(Object.keys(read(SECRET_EXAMPLE).stringData).sort()).toEqual(['REDIS_URL', basePod.volumes.find((v: { name: string }) => v.name === 'kek').secret.items[0].key].sort());
  });

  it('runs the pods under an account of their own with no API token', () => {
    const pod = one('Deployment').spec.template.spec;
    expect(pod.serviceAccountName).toBe(one('ServiceAccount').metadata.name);
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(one('ServiceAccount').automountServiceAccountToken).toBe(false);
  });

  it('scales on live sockets per pod as well as CPU: the pods metric the Prometheus Adapter serves from the PodMonitor\'s series, at a target under LIVE_MAX_SOCKETS', () => {
    const hpa = one('HorizontalPodAutoscaler');
    expect(hpa.spec.replicas).toBeUndefined();
    const byType = Object.fromEntries((hpa.spec.metrics as { type: string }[]).map((m) => [m.type, m])) as Record<string, any>;
    expect(byType.Resource.resource.name).toBe('cpu');
    const sockets = byType.Pods.pods;
    const adapter = read(ADAPTER_RULES).rules[0];
    expect(sockets.metric.name).toBe(adapter.name.as);
    expect(adapter.seriesQuery).toContain(`job="${podMonitorJob()}"`);
    expect(Object.keys(adapter.resources.overrides).sort()).toEqual(['namespace', 'pod']);
    const cap = Number(one('ConfigMap').data.LIVE_MAX_SOCKETS);
    const target = Number(sockets.target.averageValue);
    expect(sockets.target.type).toBe('AverageValue');
    expect(target).toBeLessThan(cap);
    expect(target).toBeGreaterThanOrEqual(cap / 2);
  });

  it('scrapes the pods as the alerting rules select them, and the cluster loads the rules promtool tests', async () => {
    const monitor = read(join(MONITORING, 'podmonitor.yaml'));
    const pod = one('Deployment').spec.template;
    for (const [k, v] of Object.entries(monitor.spec.selector.matchLabels)) expect(pod.metadata.labels[k], k).toBe(v);
    expect(pod.spec.containers[0].ports.map((p: { name: string }) => p.name)).toContain(monitor.spec.podMetricsEndpoints[0].port);
    expect(pod.metadata.annotations?.['prometheus.io/scrape']).toBeUndefined(); // one scrape, one job
    // every job an alert selects is one a scrape makes: the gateways' (the PodMonitor), the bridges'
    // at the venue, the blackbox probe of /readyz
    const jobs = [podMonitorJob(), 'audience-bridge', 'audience-readyz'];
    const rules = (read(ALERTS) as unknown as { groups: { rules: { alert: string; expr: string }[] }[] }).groups.flatMap((g) => g.rules);
    let selectsGateways = 0;
    for (const r of rules) {
      for (const [, op, value] of r.expr.matchAll(/\bjob\s*(=~|=|!=|!~)\s*"([^"]*)"/g)) {
        const matches = (job: string) => (op === '=' ? job === value : op === '=~' ? new RegExp(`^(?:${value})$`).test(job) : true);
        expect(jobs.some(matches), `${r.alert}: job${op}"${value}" selects no job a scrape makes`).toBe(true);
        if ((op === '=' || op === '=~') && matches(podMonitorJob())) selectsGateways++;
      }
    }
    expect(selectsGateways, `no alert selects the job the PodMonitor gives the gateways (${podMonitorJob()})`).toBeGreaterThan(0);
    // the PrometheusRule is alerts.yml, made by the script
    const generated = await run(process.execPath, ['scripts/prometheus-rule.mjs', '--check']).then(() => 0, (e: { code: number }) => e.code);
    expect(generated, 'deploy/kubernetes/monitoring/prometheusrule.yaml is what scripts/prometheus-rule.mjs makes of alerts.yml').toBe(0);
    expect(read(join(MONITORING, 'prometheusrule.yaml')).spec.groups).toEqual((read(ALERTS) as unknown as { groups: unknown }).groups);
    for (const f of (kustomization(MONITORING).resources as string[])) expect(existsSync(join(MONITORING, f)), f).toBe(true);
  });

  it('routes each participant to one pod with TLS: the Ingress hashes $audience_participant, which the controller snippet defines with the nginx file\'s maps (the ones test/ops/load-balancers.test.ts runs)', () => {
    const ingress = one('Ingress');
    const annotations = (ingress.metadata as unknown as { annotations: Record<string, string> }).annotations;
    expect(ingress.spec.ingressClassName).toBe('nginx');
    expect(annotations['nginx.ingress.kubernetes.io/upstream-hash-by']).toBe('$audience_participant');
    expect(Number(annotations['nginx.ingress.kubernetes.io/proxy-read-timeout'])).toBeGreaterThan(Number(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379' }).liveIdleTimeoutSeconds));
    const hosts = ingress.spec.rules.map((r: { host: string }) => r.host);
    expect(ingress.spec.tls[0].hosts).toEqual(hosts);
    const backend = ingress.spec.rules[0].http.paths[0].backend.service;
    expect([backend.name, backend.port.name]).toEqual([one('Service').metadata.name, one('Service').spec.ports[0].name]);
    const words = (text: string) => text.replace(/#.*$/gm, '').split(/\s+/).filter(Boolean).join(' ');
    const nginxMaps = [...readFileSync('deploy/nginx/audience-control.conf', 'utf8').matchAll(/^map [^\n]*\{\n(?:.*\n)*?\}\n/gm)].map((m) => m[0]).filter((m) => m.includes('audience_token') || m.includes('audience_participant'));
    expect(nginxMaps).toHaveLength(3);
    expect(words(read(CONTROLLER_CONFIG).data['http-snippet'])).toBe(words(nginxMaps.join('\n')));
  });

  it('agrees with the gateway: settings, ports, probes, the Service, the NetworkPolicy, the grace period', () => {
    const settings: Record<string, string> = { ...one('ConfigMap').data, ...read(join(OVERLAY, 'settings.yaml')).data };
    const known = new Set(Object.values(configProperties()).map((p) => p['x-env']));
    expect(Object.keys(settings).filter((k) => !known.has(k))).toEqual([]);
    const config = loadConfig({ ...settings, REDIS_URL: 'redis://127.0.0.1:6379' }); // refuses a value the gateway would refuse
    const pod = one('Deployment').spec.template.spec;
    const container = pod.containers[0];
    const port = (name: string) => container.ports.find((p: { name: string }) => p.name === name).containerPort as number;
    expect([port('http'), port('ops')]).toEqual([config.port, config.opsPort]);
    expect([config.host, config.opsHost]).toEqual(['0.0.0.0', '0.0.0.0']); // the kubelet and the Service reach them
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'ops' });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'ops' });
    expect(container.envFrom[0].configMapRef.name).toBe(one('ConfigMap').metadata.name);
    const kek = pod.volumes.find((v: { secret?: unknown }) => v.secret);
    expect(join(container.volumeMounts.find((m: { name: string }) => m.name === kek.name).mountPath, kek.secret.items[0].path)).toBe(config.signingKekFile);
    // the image's user is the pod's; the KEK's files belong to root and, with fsGroup, to that
    // group: the gateway reads the key through the group, no other user can
    const user = /^USER (\d+):(\d+)$/m.exec(readFileSync('deploy/Containerfile', 'utf8'))!;
    expect([pod.securityContext.runAsUser, pod.securityContext.runAsGroup]).toEqual([Number(user[1]), Number(user[2])]);
    const mode = kek.secret.defaultMode as number;
    expect(pod.securityContext.fsGroup).toBe(pod.securityContext.runAsGroup);
    expect(mode & 0o040, `defaultMode ${mode.toString(8)} lets the group read`).toBe(0o040);
    expect(mode & 0o007, `defaultMode ${mode.toString(8)} keeps other users out`).toBe(0);
    const service = one('Service');
    expect(service.spec.ports.map((p: { targetPort: string | number }) => p.targetPort)).toEqual(['http']);
    const policy = one('NetworkPolicy');
    expect(policy.spec.ingress.flatMap((r: { ports: { port: number }[] }) => r.ports.map((p) => p.port)).sort()).toEqual([config.port, config.opsPort].sort());
    const pause = container.lifecycle.preStop.sleep.seconds as number;
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(pause + config.liveDrainMs / 1000 + 10);
    expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    expect(container.resources.requests.memory).toBeDefined();
    expect(container.resources.limits.memory).toBeDefined();
    expect(one('HorizontalPodAutoscaler').spec.scaleTargetRef.name).toBe(one('Deployment').metadata.name);
    expect(one('PodDisruptionBudget').spec.selector).toEqual(one('Deployment').spec.selector);
  });

  it('a gateway started with the ConfigMap\'s settings answers the probes on its ops port', async () => {
    const settings: Record<string, string> = one('ConfigMap').data;
    const prefix = randomPrefix();
    const { admin } = await seedLayout(redis.get().server.url, prefix, DEMO_LAYOUT);
    admin.disconnect();
    const { HOST: _h, OPS_HOST: _o, SIGNING_KEK_FILE: _k, ...rest } = settings;
    const opsPort = await freePort();
    const g = await spawnGateway({ ...rest, HOST: '127.0.0.1', OPS_HOST: '127.0.0.1', OPS_PORT: String(opsPort), PORT: String(await freePort()), REDIS_URL: redis.get().server.url, REDIS_PREFIX: prefix });
    children.push(g.child);
    expect(g.opsPort).toBe(opsPort);
    for (const path of ['/readyz', '/healthz']) expect((await fetch(`http://127.0.0.1:${opsPort}${path}`)).status, path).toBe(200);
    // the series the HorizontalPodAutoscaler scales on is one the gateway serves, a gauge
    const metric = (one('HorizontalPodAutoscaler').spec.metrics as { type: string; pods?: { metric: { name: string } } }[]).find((m) => m.type === 'Pods')!.pods!.metric.name;
    expect(await (await fetch(`http://127.0.0.1:${opsPort}/metrics`)).text()).toContain(`# TYPE ${metric} gauge`);
    expect(dirname(settings.SIGNING_KEK_FILE!)).toBe('/etc/audience/kek');
  });
});
