// audiencectl signing-key: the audience tokens' signing keys, sealed under SIGNING_KEK_FILE.
import type { Command } from 'commander';
import { loadKek } from '../store/signing-kek.js';
import { isoOrDash, table } from './output.js';
import { leaf, run } from './command-kit.js';

export function addSigningCommands(program: Command): void {
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
  leaf(signing, 'rewrap', 'seal every signing secret under a new key-encryption key (then give the gateways that file: see docs/operations.md)')
    .requiredOption('--new-kek-file <file>', 'the new key-encryption key (32 random bytes, hex or base64)')
    .action(
      run(async ({ stores, out }, opts: { newKekFile: string }) => {
        const next = loadKek(opts.newKekFile, '--new-kek-file');
        const rewrapped = await stores.signingKeys.rewrap(next);
        out.result({ rewrapped, kek: next.id }, `${rewrapped} signing keys sealed under ${next.id} (${opts.newKekFile}); set SIGNING_KEK_FILE to it for every gateway and audiencectl`);
      }),
    );
}
