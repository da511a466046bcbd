import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { LOADED_MACHINE_MS } from './test/helpers/loaded-machine.js';

/**
 * Tests that load the machine on purpose (hundreds of phones and fault-injecting links, thousands of
 * sockets, an npm install and a tsc run, a container image built), that count UDP datagrams (a
 * loaded machine drops some before the sink reads them) or that hold a latency to a bound (a
 * revoked key's sockets closed on three processes within 2 s): they run after the others, one file at a time, so neither
 * they nor their neighbours measure a machine that another test is busy with.
 */
const ALONE = [
  // first, while the PACED file runs beside it (it passed so beside both PACED candidates, npm test
  // 2026-12-06). audience-loadtest exits 106 when its own schedule runs more than 50 ms late at p99
  // (its figures would describe the machine, not the target): beside the busy rest it once did
  'test/loadtest/loadtest.test.ts',
  'test/faults/phones-on-bad-networks.test.ts',
  // a show timed to a 3 s bound across hosts: 300 phones, four gateway workers, nginx and Redis
  'test/faults/host-loss.test.ts',
  // one show across twelve hosts (a Redis Cluster, three gateway hosts, nginx, a venue, 1,500 phones), through four faults
  'test/faults/show-across-hosts.test.ts',
  'test/faults/live-drain.test.ts',
  'test/faults/bridge-chaos.test.ts',
  // not PACED: run in the PACED worker thread after the moderation file, the thread could not be
  // ended at the run's end ("Failed to terminate worker", .ci/run 2026-12-07), which held the run
  // open; what kept it is not known
  'test/faults/bridge-wan.test.ts',
  'test/client/package.test.ts',
  'test/bridge/fuzz.test.ts',
  'test/ops/container.test.ts',
  'test/gateway/participant-flood.test.ts',
  'test/faults/live-processes.test.ts',
  'test/cluster/live.test.ts',
  // holds an idle bridge's CPU share to a bound: beside another file, the same ticks cost more
  'test/bridge/tick-clock.test.ts',
  // holds the spread of 20 Chromium pages' light starts to 16 ms: beside another file, its timers fire late
  'test/light/desk-to-phones.e2e.test.ts',
  // holds a DMX universe's frame rate to 30 a second within 5 % on the wire: beside another file's
  // processes on 2 cores its send loop once skipped a fifth of its frames
  'test/bridge/dmx-out.test.ts',
];

/**
 * Files that hold a latency to a bound but spend most of their time waiting at a fixed pace (a
 * minute of texts at show pace) and use under a quarter of a core: they run one at a time beside
 * the first ALONE file, not beside the busy rest, each in a worker thread (their gateways and
 * bridges are processes of their own). Their bounds hold with margin there: moderation's
 * approval-to-display p99 measured 13 to 18 ms against its 60 ms (npm test, 2026-12-06).
 */
const PACED = [
  'test/gateway/moderation-throughput.test.ts',
];

/** The ALONE files run in the order listed (the rest as vitest orders them). */
class AloneInOrder extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => ALONE.findIndex((a) => f.moduleId.endsWith(a));
    const alone = sorted.filter((f) => rank(f) >= 0).sort((a, b) => rank(a) - rank(b));
    return [...sorted.filter((f) => rank(f) < 0), ...alone];
  }
}

/**
 * The other files run two at a time (each in its own process): most of a file's time is spent
 * waiting on its processes, its Redis and its sockets, so two share the 2-core machine well.
 */
const FORKS = 2;

export default defineConfig({
  test: {
    sequence: { sequencer: AloneInOrder },
    globalSetup: ['test/global-setup.ts'],
    // uWebSockets.js is a native addon: files run in processes, not in worker threads
    pool: 'forks',
    // isolate: false: a fork runs file after file (the pool keeps its workers) and keeps the modules
    // it loaded, so a module is loaded once per fork, not once per file; each file still starts
    // and stops its own Redis, servers and clients in its hooks
    poolOptions: { forks: { maxForks: FORKS, minForks: 1, isolate: false } },
    testTimeout: 30_000,
    // expect.poll waits for something that must happen as long as eventually does (1 s by default)
    expect: { poll: { timeout: LOADED_MACHINE_MS } },
    // a file's setup starts its processes (Redis, gateways, Chromium) and hashes passwords: beside
    // another file and a busy core, the team page's took over 30 s in one npm test run
    hookTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'tests', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...ALONE, ...PACED], sequence: { groupOrder: 0 } } },
      // one process for them all, as a single fork is; each file's modules made afresh
      { extends: true, test: { name: 'alone', include: ALONE, poolOptions: { forks: { singleFork: true, isolate: true } }, sequence: { groupOrder: 1 } } },
      // a pool of its own: the ALONE files' single fork would take these in turn after its own
      { extends: true, test: { name: 'paced', include: PACED, pool: 'threads', poolOptions: { threads: { singleThread: true } }, sequence: { groupOrder: 1 } } },
    ],
  },
});
