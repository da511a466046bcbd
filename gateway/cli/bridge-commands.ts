// audiencectl bridge: a venue bridge's own Redis user.
import type { Command } from 'commander';
import { bridgeRedisUrl, grantBridge, revokeBridge } from '../store/bridge-acl.js';
import { leaf, run } from './command-kit.js';

export function addBridgeCommands(program: Command): void {
  const bridge = program.command('bridge').description("a venue bridge's own Redis user: its layouts' streams, presence and cue state, nothing else");
  leaf(bridge, 'grant', "create or update the bridge's Redis user (bridge-<ID>) for these layouts, with a new password; prints the redisUrl for its config")
    .requiredOption('--bridge-id <id>', "the bridge's bridgeId")
    .requiredOption('--layout <layoutId>', 'a layout it serves (repeat for more)', (v: string, all: string[]) => [...all, v], [] as string[])
    .action(
      run(async ({ stores, out, target }, opts: { bridgeId: string; layout: string[] }) => {
        const g = await grantBridge(stores.redis, stores.keys.prefix, opts.bridgeId, opts.layout);
        const redisUrl = bridgeRedisUrl(target.clusterNodes?.[0] ?? target.url, g.user, g.password);
        const where = target.clusterNodes?.length ? `on ${g.nodes} cluster nodes; give the bridge redisClusterNodes with these credentials in the first` : 'set';
        const kept = g.saved ? 'saved to the aclfile' : 'not saved: this Redis has no aclfile, so it lasts until Redis restarts (see docs/venue.md)';
        out.result({ user: g.user, password: g.password, redisUrl }, `Redis user ${g.user} ${where} (${kept}) for ${opts.layout.join(', ')}; the password is shown this once.\nredisUrl: ${redisUrl}`);
      }),
    );
  leaf(bridge, 'revoke', "delete the bridge's Redis user: it can no longer connect")
    .requiredOption('--bridge-id <id>', "the bridge's bridgeId")
    .action(
      run(async ({ stores, out }, opts: { bridgeId: string }) => {
        const deleted = await revokeBridge(stores.redis, opts.bridgeId);
        out.result({ user: `bridge-${opts.bridgeId}`, deleted }, deleted ? `Redis user bridge-${opts.bridgeId} deleted` : `no Redis user bridge-${opts.bridgeId}`);
      }),
    );
}
