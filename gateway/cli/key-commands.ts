// audiencectl key: issue, list and revoke API keys.
import type { Command } from 'commander';
import { isoOrDash, table } from './output.js';
import { leaf, numberArgument, run } from './command-kit.js';

export function addKeyCommands(program: Command): void {
  const key = program.command('key').description('API keys');
  leaf(key, 'create', 'issue an API key; its secret is printed this once')
    .requiredOption('--team <teamId>', 'owning team')
    .option('--name <label>', 'a label to recognise the key by')
    .option('--layouts <ids>', "comma-separated allow-list (default: all of the team's layouts)")
    .option('--mint-rate <perSecond>', 'audience tokens a second this key may keep minting, per gateway process (default: MINT_RATE_PER_SECOND)')
    .option('--mint-burst <count>', 'audience tokens this key may mint at once after a pause (default: MINT_BURST)')
    .action(
      run(async ({ stores, out }, opts: { team: string; name?: string; layouts?: string; mintRate?: string; mintBurst?: string }) => {
        await stores.teams.require(opts.team);
        const created = await stores.apiKeys.create(opts.team, {
          ...(opts.name !== undefined && { name: opts.name }),
          ...(opts.layouts !== undefined && { layouts: opts.layouts.split(',') }),
          ...(opts.mintRate !== undefined && { mintRate: numberArgument('--mint-rate', opts.mintRate) }),
          ...(opts.mintBurst !== undefined && { mintBurst: numberArgument('--mint-burst', opts.mintBurst) }),
        });
        out.result(
          { keyId: created.keyId, apiKey: created.apiKey },
          `API key ${created.keyId} created. Its secret is shown this once; store it now:\n${created.apiKey}`,
        );
      }),
    );
  leaf(key, 'list', "list a team's API keys (never their secrets)")
    .requiredOption('--team <teamId>', 'team')
    .action(
      run(async ({ stores, out }, opts: { team: string }) => {
        await stores.teams.require(opts.team);
        const keys = await stores.apiKeys.listByTeam(opts.team);
        const scope = (k: (typeof keys)[number]) => (k.scope.kind === 'team' ? 'team' : k.scope.layouts.join(','));
        out.result(
          { keys },
          table([
            ['KEY', 'NAME', 'SCOPE', 'CREATED', 'LAST USED', 'STATUS'],
            ...keys.map((k) => [k.keyId, k.name, scope(k), isoOrDash(k.createdAt), isoOrDash(k.lastUsedAt), k.revokedAt === null ? 'active' : `revoked ${isoOrDash(k.revokedAt)}`]),
          ]),
        );
      }),
    );
  leaf(key, 'revoke', 'revoke an API key at once on every gateway')
    .argument('<keyId>')
    .action(
      run(async ({ stores, out }, keyId: string) => {
        const k = await stores.apiKeys.revoke(keyId);
        out.result({ keyId, revokedAt: new Date(k.revokedAt ?? Date.now()).toISOString() }, `API key ${keyId} revoked`);
      }),
    );
}
