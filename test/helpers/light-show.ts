// A lit layout's show in real processes, as the light tests run it: the layout (with its light
// canvas) seeded on a prefix of its own, a gateway process on it, and a bridge process under the
// Redis user `audiencectl bridge grant` makes, playing the layout's light to its stream. stop()
// kills both and revokes the bridge's user.
import type { ChildProcess } from 'node:child_process';
import type { LayoutDefinition } from '../../schemas/types.js';
import { configFile, spawnBridge, stopProcess } from './bridge.js';
import { audiencectl, audiencectlJson } from './cli.js';
import { seedLayout, spawnGateway, type GatewayProcess } from './gateway-process.js';
import { randomPrefix } from './redis.js';

export interface LightShow {
  gateway: GatewayProcess;
  /** the team's API key (POST /token) */
  apiKey: string;
  /** REDIS_URL and REDIS_PREFIX of the show's data, for audiencectl */
  env: { REDIS_URL: string; REDIS_PREFIX: string };
  /** the bridge's output so far */
  bridgeOutput: () => string;
  /** the bridge's ops port (/metrics) */
  bridgeOpsPort: number;
  /** the port of the layout's light OSC input, when the layout's bridge entry asks for one (lightOscPort) */
  lightOscPort: number;
  stop(): Promise<void>;
}

export interface LightShowOptions {
  /** the layout's entry in the bridge's config beyond its layoutId (default: OSC to the discard port) */
  bridgeLayout?: Record<string, unknown>;
  /** more of the bridge's config (sacn, ...) */
  bridgeConfig?: Record<string, unknown>;
}

export async function startLightShow(redisUrl: string, canvas: LayoutDefinition, o: LightShowOptions = {}): Promise<LightShow> {
  const env = { REDIS_URL: redisUrl, REDIS_PREFIX: randomPrefix() };
  const bridgeId = `light-${Math.random().toString(36).slice(2, 8)}`;
  const children: ChildProcess[] = [];
  const stop = async () => {
    for (const c of children) await stopProcess(c, 'SIGKILL');
    await audiencectl(env, 'bridge', 'revoke', '--bridge-id', bridgeId);
  };
  try {
    const seeded = await seedLayout(redisUrl, env.REDIS_PREFIX, canvas);
    seeded.admin.disconnect();
    const gateway = await spawnGateway(env);
    children.push(gateway.child);
    const grant = await audiencectlJson(env, 'bridge', 'grant', '--bridge-id', bridgeId, '--layout', canvas.layoutId);
    const layout = { layoutId: canvas.layoutId, targets: [{ host: '127.0.0.1', port: 9 }], ...o.bridgeLayout };
    const bridge = await spawnBridge(['--config', configFile({ redisUrl: grant.redisUrl, prefix: env.REDIS_PREFIX, bridgeId, more: o.bridgeConfig, layouts: [layout] })]);
    children.push(bridge.child);
    return {
      gateway,
      apiKey: seeded.apiKey,
      env,
      bridgeOutput: bridge.output,
      bridgeOpsPort: Number(/"opsPort":(\d+)/.exec(bridge.output())![1]),
      lightOscPort: Number(/"port":(\d+)[^\n]*light OSC input listening/.exec(bridge.output())?.[1] ?? 0),
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
