// audiencectl token: revoke a layout's audience tokens, or one participant's.
import type { Command } from 'commander';
import { AppError } from '../errors.js';
import { leaf, timeArgument, run } from './command-kit.js';

export function addTokenCommands(program: Command): void {
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
}
