// Loads uWebSockets.js (the @based/uws build of uWS.js v20.51.0, pinned in package.json), which
// ships native binaries for Node 20, 22 and 24 on glibc Linux x64. It has no JavaScript fallback:
// when the binary for this Node does not load (another Node ABI, or a glibc older than the binary
// needs: Node 24's wants 2.38), the gateway refuses to start and says why and what to do. It also
// checks that what loaded is the native binding, not something that merely answers.
import { createRequire } from 'node:module';
import type uwsModule from 'uWebSockets.js';

type Uws = typeof uwsModule;

export class NativeUwsMissing extends Error {
  override name = 'NativeUwsMissing';
}

/** True when App is the native binding (its functions print as native code). */
export function isNativeUws(mod: { App: unknown }): boolean {
  return typeof mod.App === 'function' && Function.prototype.toString.call(mod.App).includes('[native code]');
}

/** The glibc this process runs on, as Node reports it ('' when not glibc). */
export function glibcVersion(): string {
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return header?.glibcVersionRuntime ?? '';
}

/** What to tell the operator when the native binary did not load. */
export function refusal(cause: string): string {
  const glibc = glibcVersion();
  return [
    `uWebSockets.js has no working native binary for Node ${process.versions.node} (ABI ${process.versions.modules}) on ${process.platform}-${process.arch}${glibc ? ` with glibc ${glibc}` : ''}; refusing to start.`,
    `It runs natively on Node 20 and 22 with glibc >= 2.36, and on Node 24 with glibc >= 2.38 (Debian 13, Ubuntu 24.04).`,
    `Run the gateway with one of those (see the README, "Supported Node.js"): scripts/node.sh 22 installs Node 22 from the npm registry and prints its path.`,
    `(${cause.split('\n').filter(Boolean).at(-1) ?? cause})`,
  ].join(' ');
}

let loaded: Uws | null = null;

export function nativeUws(): Uws {
  if (loaded) return loaded;
  let mod: Uws;
  try {
    mod = createRequire(import.meta.url)('uWebSockets.js') as Uws;
  } catch (e) {
    throw new NativeUwsMissing(refusal((e as Error).message));
  }
  if (!isNativeUws(mod)) throw new NativeUwsMissing(refusal('the module loaded, but its App is not the native binding'));
  loaded = mod;
  return mod;
}
