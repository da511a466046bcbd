// audiencectl admin: the team page's administrators.
import type { Command } from 'commander';
import { generatePassword } from '../admin/passwords.js';
import { leaf, run } from './command-kit.js';

export function addAdminCommands(program: Command): void {
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
}
