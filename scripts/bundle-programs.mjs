// Build step, after tsc: audience-gateway (dist/gateway/main.js), audiencectl
// (dist/gateway/cli/main.js) and audience-bridge (dist/bridge/main.js) are each rewritten in place
// as one file holding their whole module graph, node_modules included, so a start reads and links one file instead of hundreds: half the
// CPU of a start (docs/development.md has the figures). uWebSockets.js stays outside (a native
// addon), and so does what the code loads by path at run time (the validators' ajv runtime, the
// word lists, the pages' static files, the Lua scripts), which the build leaves in dist/ and
// node_modules.
//
// Each module's import.meta.url is rewritten to the URL its own file had, made from the bundle's
// location, so a path a module builds from it (../../package.json, ./lua, ./static) names what it
// named before the module was bundled.
import { build } from 'esbuild';
import { readFile } from 'node:fs/promises';
import { dirname, relative, resolve } from 'node:path';

const PROGRAMS = ['dist/gateway/main.js', 'dist/gateway/cli/main.js', 'dist/bridge/main.js'];

/** import.meta.url, in a module bundled into `bundle`, as the module's own file URL. */
function ownMetaUrl(bundle) {
  return {
    name: 'own-import-meta-url',
    setup(b) {
      b.onLoad({ filter: /\.(m?js|cjs)$/ }, async (args) => {
        const text = await readFile(args.path, 'utf8');
        if (!text.includes('import.meta.url')) return undefined;
        const own = `new URL(${JSON.stringify(relative(dirname(bundle), args.path))}, import.meta.url).href`;
        return { contents: text.replaceAll('import.meta.url', own), loader: 'js', resolveDir: dirname(args.path) };
      });
    },
  };
}

for (const program of PROGRAMS) {
  const file = resolve(program);
  await build({
    entryPoints: [file],
    outfile: file,
    allowOverwrite: true,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: ['uWebSockets.js'],
    // the CommonJS dependencies' require() of Node's own modules, inside an ES module
    banner: { js: "import { createRequire as bundleRequire } from 'node:module'; const require = bundleRequire(import.meta.url);" },
    sourcemap: 'linked',
    plugins: [ownMetaUrl(file)],
    logLevel: 'warning',
  });
}
