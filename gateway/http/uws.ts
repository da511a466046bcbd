// Loads uWebSockets.js and refuses its pure-JS fallback: when the native binary does not load, the
// package silently serves with a slow Node implementation, which would break every latency promise.
import uws from 'uWebSockets.js';

export class NativeUwsMissing extends Error {
  override name = 'NativeUwsMissing';
}

/** True when App is the native binding (its functions print as native code). */
export function isNativeUws(mod: { App: unknown }): boolean {
  return typeof mod.App === 'function' && Function.prototype.toString.call(mod.App).includes('[native code]');
}

export function nativeUws(): typeof uws {
  if (!isNativeUws(uws)) {
    throw new NativeUwsMissing(
      `uWebSockets.js could not load its native binary for Node ${process.versions.node} (ABI ${process.versions.modules}, ${process.platform}-${process.arch}) and fell back to a slow JavaScript server; refusing to start. Use Node 20 on glibc >= 2.36 x64 and unset UWS_USE_FALLBACK.`,
    );
  }
  return uws;
}
