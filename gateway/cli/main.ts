#!/usr/bin/env node
// audiencectl: the control plane from a shell. Talks to Redis directly (REDIS_URL, REDIS_PREFIX);
// every gateway learns of each change through the invalidation channel. One command group a file.
import { Command, CommanderError } from 'commander';
import { addAdminCommands } from './admin-commands.js';
import { addBridgeCommands } from './bridge-commands.js';
import { addKeyCommands } from './key-commands.js';
import { addLayoutCommands } from './layout-commands.js';
import { addLightCommand } from './light-command.js';
import { addMigrateCommand } from './migrate-command.js';
import { addCrowdCommands, addModerationCommands, addShowCommands } from './show-commands.js';
import { addSigningCommands } from './signing-commands.js';
import { addTeamCommands } from './team-commands.js';
import { addTokenCommands } from './token-commands.js';

const program = new Command('audiencectl')
  .description('Manage teams, layouts, API keys and signing keys of audience-control (REDIS_URL or REDIS_CLUSTER_NODES selects Redis).')
  .showHelpAfterError()
  .exitOverride();

for (const add of [addTeamCommands, addLayoutCommands, addCrowdCommands, addModerationCommands, addShowCommands, addLightCommand, addTokenCommands, addKeyCommands, addAdminCommands, addSigningCommands, addBridgeCommands, addMigrateCommand]) add(program);

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
