import { configDefaults, defineConfig } from 'vitest/config';
import { LOADED_MACHINE_MS } from './test/helpers/loaded-machine.js';

/**
 * Tests that load the machine on purpose (hundreds of phones and fault-injecting links, thousands of
 * sockets, an npm install and a tsc run, a container image built) or that count UDP datagrams (a loaded machine drops some before the sink reads them):
 * they run after the others, one file at a time, so neither they nor their neighbours measure a
 * machine that another test is busy with.
 */
const ALONE = ['test/faults/phones-on-bad-networks.test.ts', 'test/faults/live-drain.test.ts', 'test/client/package.test.ts', 'test/bridge/fuzz.test.ts', 'test/ops/container.test.ts', 'test/gateway/participant-flood.test.ts'];

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    // uWebSockets.js is a native addon: run each file in its own process.
    pool: 'forks',
    testTimeout: 30_000,
    // expect.poll waits for something that must happen as long as eventually does (1 s by default)
    expect: { poll: { timeout: LOADED_MACHINE_MS } },
    hookTimeout: 30_000,
    projects: [
      { extends: true, test: { name: 'tests', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...ALONE], sequence: { groupOrder: 0 } } },
      { extends: true, test: { name: 'alone', include: ALONE, poolOptions: { forks: { singleFork: true } }, sequence: { groupOrder: 1 } } },
    ],
  },
});
