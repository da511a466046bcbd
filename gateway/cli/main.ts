#!/usr/bin/env node
// audiencectl: the control plane from a shell. Talks to Redis directly (REDIS_URL, REDIS_PREFIX);
// every gateway learns of each change through the invalidation channel.
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import type { RedisClient, RedisTarget } from '../../runtime/redis.js';
import { loadConfig, recordBounds, redisTarget } from '../config.js';
import { generatePassword } from '../admin/passwords.js';
import { AppError } from '../errors.js';
import { describeAggregate } from '../../schemas/aggregate.js';
import { dmxFixtures, DMX_FIXTURE_CHANNELS } from '../../schemas/light.js';
import { checkLayoutDefinition } from '../layouts/check-definition.js';
import { connectToolRedis } from '../store/redis.js';
import { bridgeRedisUrl, grantBridge, revokeBridge } from '../store/bridge-acl.js';
import { migrateLegacyKeys } from '../store/migrate.js';
import { loadKek } from '../store/signing-kek.js';
import { createStores, type Stores } from '../store/stores.js';
import { addCrowdCommands, addModerationCommands, addShowCommands } from './show-commands.js';
import { CliOutput, isoOrDash, operator, table } from './output.js';
import { addLightCommand } from './light-command.js';

interface Ctx {
  stores: Stores;
  out: CliOutput;
  /** where Redis is (the admin's URL or seed nodes) */
  target: RedisTarget;
}

type Action = (ctx: Ctx, ...args: never[]) => Promise<void>;

/** Wraps a command body: parses --json, connects to Redis, reports errors, sets the exit code. */
function run(body: Action) {
  return async (...args: unknown[]): Promise<void> => {
    const cmd = args[args.length - 1] as Command;
    const out = new CliOutput(cmd.opts<{ json?: boolean }>().json === true);
    let redis: RedisClient | undefined;
    try {
      // only what audiencectl uses: a bad PORT or TOKEN_TTL_SECONDS is the gateway's business
      const env = process.env;
      const config = loadConfig({
        REDIS_URL: env.REDIS_URL, REDIS_CLUSTER_NODES: env.REDIS_CLUSTER_NODES, REDIS_PREFIX: env.REDIS_PREFIX,
        REDIS_TLS_CA_FILE: env.REDIS_TLS_CA_FILE, REDIS_TLS_CERT_FILE: env.REDIS_TLS_CERT_FILE, REDIS_TLS_KEY_FILE: env.REDIS_TLS_KEY_FILE, REDIS_TLS_SERVERNAME: env.REDIS_TLS_SERVERNAME,
        SIGNING_KEK_FILE: env.SIGNING_KEK_FILE, SHOW_RECORD_RETENTION_SECONDS: env.SHOW_RECORD_RETENTION_SECONDS, SHOW_RECORD_MAX_BYTES: env.SHOW_RECORD_MAX_BYTES,
      });
      // only the commands that read or make a signing secret need it
      const kek = config.signingKekFile ? loadKek(config.signingKekFile) : null;
      const target = redisTarget(config);
      redis = await connectToolRedis(target);
      await body({ stores: createStores(redis, config.redisPrefix, kek, recordBounds(config)), out, target }, ...(args.slice(0, -1) as never[]));
    } catch (e) {
      process.exitCode = out.failure(e);
    } finally {
      redis?.disconnect();
    }
  };
}

function readJsonFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new AppError('invalid_argument', `cannot read ${file}: ${(e as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new AppError('invalid_layout', `${file} is not JSON: ${(e as Error).message}`);
  }
}

const program = new Command('audiencectl')
  .description('Manage teams, layouts, API keys and signing keys of audience-control (REDIS_URL or REDIS_CLUSTER_NODES selects Redis).')
  .showHelpAfterError()
  .exitOverride();

function leaf(parent: Command, name: string, description: string): Command {
  return parent.command(name).description(description).option('--json', 'print one JSON object');
}

const team = program.command('team').description('teams');
leaf(team, 'create', 'create a team')
  .requiredOption('--name <name>', 'team name')
  .action(
    run(async ({ stores, out }, opts: { name: string }) => {
      const t = await stores.teams.create(opts.name);
      out.result({ teamId: t.teamId }, `team ${t.teamId} created (${t.name})`);
    }),
  );
leaf(team, 'list', 'list teams').action(
  run(async ({ stores, out }) => {
    const teams = await stores.teams.list();
    out.result({ teams }, table([['TEAM', 'NAME', 'CREATED'], ...teams.map((t) => [t.teamId, t.name, isoOrDash(t.createdAt)])]));
  }),
);

const layout = program.command('layout').description('layouts');
leaf(layout, 'import', 'create or replace a layout from a definition file')
  .argument('<file>', 'layout definition (JSON, see schemas/layout-definition.schema.json)')
  .requiredOption('--team <teamId>', 'owning team')
  .action(
    run(async ({ stores, out }, file: string, opts: { team: string }) => {
      await stores.teams.require(opts.team);
      const r = await stores.layouts.import(opts.team, readJsonFile(file));
      out.result({ layoutId: r.layoutId, replaced: r.replaced }, `layout ${r.layoutId} ${r.replaced ? 'replaced' : 'created'}`);
    }),
  );
leaf(layout, 'check', 'validate a definition file without importing it (every problem at once; needs no Redis)')
  .argument('<file>', 'layout definition (JSON, see schemas/layout-definition.schema.json)')
  .action((file: string, _opts: unknown, cmd: Command) => {
    const out = new CliOutput(cmd.opts<{ json?: boolean }>().json === true);
    try {
      const def = checkLayoutDefinition(readJsonFile(file));
      const controls = def.pages.reduce((n, p) => n + p.controls.length, 0);
      out.result({ valid: true, layoutId: def.layoutId, pages: def.pages.length, controls }, `${file}: a valid layout (${def.layoutId}: ${def.pages.length} pages, ${controls} controls)`);
    } catch (e) {
      process.exitCode = out.failure(e);
    }
  });
leaf(layout, 'list', "list a team's layouts")
  .requiredOption('--team <teamId>', 'team')
  .action(
    run(async ({ stores, out }, opts: { team: string }) => {
      await stores.teams.require(opts.team);
      const layouts = await stores.layouts.listByTeam(opts.team);
      const rows = layouts.map((l) => ({ layoutId: l.layoutId, name: l.name, activePageId: l.activePageId, pages: l.pages.map((p) => p.pageId) }));
      out.result({ layouts: rows }, table([['LAYOUT', 'NAME', 'ACTIVE PAGE', 'PAGES'], ...rows.map((r) => [r.layoutId, r.name, r.activePageId, r.pages.join(',')])]));
    }),
  );
leaf(layout, 'show', 'show a layout with all its pages')
  .argument('<layoutId>')
  .action(
    run(async ({ stores, out }, layoutId: string) => {
      const l = await stores.layouts.get(layoutId);
      if (!l) throw new AppError('layout_not_found', `no layout ${JSON.stringify(layoutId)}`);
      const object = {
        layoutId: l.layoutId,
        teamId: l.teamId,
        name: l.name,
        activePageId: l.activePageId,
        ...(l.limits && { limits: l.limits }),
        ...(l.zones.length > 0 && { zones: l.zones }),
        ...(l.light && { light: { ...l.light, ...(l.light.dmx && { fixtures: dmxFixtures(l.light) }) } }),
        ...(l.tokensRevokedBefore > 0 && { tokensRevokedBefore: new Date(l.tokensRevokedBefore).toISOString() }),
        pages: l.pages,
      };
      const lines = [`${l.layoutId} (${l.name}), team ${l.teamId}, active page ${l.activePageId}${l.zones.length > 0 ? `, zones ${l.zones.join(', ')}` : ''}`];
      if (l.light) lines.push(`light: lead ${l.light.lightLeadMs} ms, ${l.light.zones.length > 0 ? `zones ${l.light.zones.join(', ')}` : 'every phone as zone *'}${l.light.dmx ? `; sACN universe ${l.light.dmx.universe}: ${dmxFixtures(l.light).map((f) => `${f.zone} at ${f.address}`).join(', ')} (${DMX_FIXTURE_CHANNELS} channels each: dimmer, red, green, blue, strobe, pattern)` : ''}`);
      for (const p of l.pages) {
        lines.push(`page ${p.pageId}${p.pageId === l.activePageId ? ' (active)' : ''}: ${p.name}`);
        for (const c of p.controls) lines.push(`  lid ${c.lid}  ${c.address}  ${c.type}  ${c.props.label}${c.aggregate ? `  (crowd: ${describeAggregate(c.aggregate)})` : ''}`);
      }
      out.result(object, lines.join('\n'));
    }),
  );
leaf(layout, 'activate', 'make a page the active one (every gateway switches at once)')
  .argument('<layoutId>')
  .argument('<pageId>')
  .option('--by <name>', 'who switched, as the show record says it (default: cli:<user>@<host>)')
  .action(
    run(async ({ stores, out }, layoutId: string, pageId: string, opts: { by?: string }) => {
      await stores.layouts.activate(layoutId, pageId, operator(opts.by));
      out.result({ layoutId, activePageId: pageId }, `layout ${layoutId}: page ${pageId} is active`);
    }),
  );

addCrowdCommands(program, leaf, run);
addModerationCommands(program, leaf, run);
addShowCommands(program, leaf, run);
addLightCommand(program, leaf, run);

const token = program.command('token').description('audience tokens');
leaf(token, 'revoke', "revoke a layout's audience tokens: all minted before now (or --before), or one participant's (--sub)")
  .requiredOption('--layout <layoutId>', 'the layout whose tokens to revoke')
  .option('--before <time>', 'revoke the tokens minted before this time (ISO 8601, or ms since the epoch; default: now)')
  .option('--sub <sub>', "revoke one participant's tokens (the token's sub claim) instead")
  .action(
    run(async ({ stores, out }, opts: { layout: string; before?: string; sub?: string }) => {
      if (opts.sub !== undefined && opts.before !== undefined) throw new AppError('invalid_argument', 'give --before or --sub, not both');
      if (opts.sub !== undefined) {
        if (!/^aud_[A-Za-z0-9_-]{16}$/.test(opts.sub)) throw new AppError('invalid_argument', `--sub must be a token's sub (aud_ and 16 characters); got ${JSON.stringify(opts.sub)}`);
        const at = await stores.layouts.revokeTokens(opts.layout, { sub: opts.sub });
        out.result({ layoutId: opts.layout, sub: opts.sub, revokedAt: new Date(at).toISOString() }, `layout ${opts.layout}: the tokens of ${opts.sub} are revoked`);
        return;
      }
      const before = opts.before === undefined ? Date.now() : timeArgument('--before', opts.before);
      const cut = await stores.layouts.revokeTokens(opts.layout, { before });
      out.result(
        { layoutId: opts.layout, revokedBefore: new Date(cut).toISOString() },
        `layout ${opts.layout}: audience tokens minted before ${new Date(cut).toISOString()} are revoked on every gateway`,
      );
    }),
  );

/** A time given on the command line (ISO 8601 or ms since the epoch), or invalid_argument naming the option. */
function timeArgument(option: string, text: string): number {
  const ms = /^\d+$/.test(text) ? Number(text) : Date.parse(text);
  if (!Number.isFinite(ms)) throw new AppError('invalid_argument', `${option} must be an ISO 8601 time or ms since the epoch; got ${JSON.stringify(text)}`);
  return ms;
}

/** A number given on the command line, or invalid_argument naming the option. */
function numberArgument(option: string, text: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n)) throw new AppError('invalid_argument', `${option} must be a number; got ${JSON.stringify(text)}`);
  return n;
}

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

const admin = program.command('admin').description('team administrators (the management page at /admin/)');
leaf(admin, 'create', 'create an administrator; prints a generated password once')
  .requiredOption('--team <teamId>', 'the team they manage')
  .requiredOption('--email <email>', 'their sign-in email')
  .action(
    run(async ({ stores, out }, opts: { team: string; email: string }) => {
      await stores.teams.require(opts.team);
      const password = generatePassword();
      const a = await stores.admins.create(opts.team, opts.email, password);
      out.result({ email: a.email, password }, `administrator ${a.email} created for team ${a.teamId}. Password (shown this once):\n${password}`);
    }),
  );
leaf(admin, 'reset-password', 'give an administrator a new generated password (ends their sessions)')
  .argument('<email>')
  .action(
    run(async ({ stores, out }, email: string) => {
      const password = generatePassword();
      const a = await stores.admins.resetPassword(email, password);
      out.result({ email: a.email, password }, `new password for ${a.email} (shown this once):\n${password}`);
    }),
  );

const signing = program.command('signing-key').alias('signing-keys').description('audience-token signing keys (sealed in Redis under SIGNING_KEK_FILE)');
leaf(signing, 'list', 'list signing keys').action(
  run(async ({ stores, out }) => {
    const keys = await stores.signingKeys.list();
    out.result({ keys }, table([['KID', 'CREATED', 'RETIRED', 'CURRENT'], ...keys.map((k) => [k.kid, isoOrDash(k.createdAt), isoOrDash(k.retiredAt), k.current ? 'yes' : ''])]));
  }),
);
leaf(signing, 'rotate', 'sign new tokens with a new key; tokens signed earlier keep verifying').action(
  run(async ({ stores, out }) => {
    const k = await stores.signingKeys.rotate();
    out.result({ kid: k.kid }, `signing key ${k.kid} is now current`);
  }),
);
leaf(signing, 'retire', 'stop accepting tokens signed with a key')
  .argument('<kid>')
  .action(
    run(async ({ stores, out }, kid: string) => {
      const k = await stores.signingKeys.retire(kid);
      out.result({ kid: k.kid, retiredAt: new Date(k.retiredAt ?? Date.now()).toISOString() }, `signing key ${kid} retired`);
    }),
  );

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

leaf(signing, 'rewrap', 'seal every signing secret under a new key-encryption key (then give the gateways that file: see docs/operations.md)')
  .requiredOption('--new-kek-file <file>', 'the new key-encryption key (32 random bytes, hex or base64)')
  .action(
    run(async ({ stores, out }, opts: { newKekFile: string }) => {
      const next = loadKek(opts.newKekFile, '--new-kek-file');
      const rewrapped = await stores.signingKeys.rewrap(next);
      out.result({ rewrapped, kek: next.id }, `${rewrapped} signing keys sealed under ${next.id} (${opts.newKekFile}); set SIGNING_KEK_FILE to it for every gateway and audiencectl`);
    }),
  );

leaf(program, 'migrate', 'move data in the untagged key names of the first releases to the key names of Redis Cluster, and seal signing secrets stored in plain (safe to run again)').action(
  run(async ({ stores, out }) => {
    const { moved } = await migrateLegacyKeys(stores.redis, stores.keys.prefix);
    const sealed = await stores.signingKeys.sealPlain();
    out.result({ moved, sealed }, moved === 0 && sealed === 0 ? 'nothing to migrate' : `${moved} keys moved to their tagged names; ${sealed} signing keys sealed under SIGNING_KEK_FILE`);
  }),
);

try {
  await program.parseAsync(process.argv);
} catch (e) {
  if (!(e instanceof CommanderError)) throw e;
  process.exitCode = e.exitCode === 0 ? 0 : 2;
  // commander already explained the usage error on stderr; --json callers also get it as an object.
  if (e.exitCode !== 0 && process.argv.includes('--json')) {
    process.stdout.write(`${JSON.stringify({ error: { code: 'invalid_argument', message: e.message.replace(/^error: /, '') } })}\n`);
  }
}
