// audiencectl migrate: the first releases' key names to Redis Cluster's, and signing secrets stored in plain sealed.
import type { Command } from 'commander';
import { migrateLegacyKeys } from '../store/migrate.js';
import { leaf, run } from './command-kit.js';

export function addMigrateCommand(program: Command): void {
  leaf(program, 'migrate', 'move data in the untagged key names of the first releases to the key names of Redis Cluster, and seal signing secrets stored in plain (safe to run again)').action(
    run(async ({ stores, out }) => {
      const { moved } = await migrateLegacyKeys(stores.redis, stores.keys.prefix);
      const sealed = await stores.signingKeys.sealPlain();
      out.result({ moved, sealed }, moved === 0 && sealed === 0 ? 'nothing to migrate' : `${moved} keys moved to their tagged names; ${sealed} signing keys sealed under SIGNING_KEK_FILE`);
    }),
  );
}
