// Preloaded into the gateway by `npm run bench:lab -- profile`: V8's CPU profiler, or its sampling heap
// profiler counting objects the garbage collector already took too (what a request allocates, not
// what is still alive), or with PROFILE_KIND=promoted only the objects that outlived the young
// generation. It starts on SIGUSR2, after the warm-up (minting and first verifications stay out of
// the figures), and writes $PROFILE_OUT on exit.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const heap = process.env.PROFILE_KIND === 'heap' || process.env.PROFILE_KIND === 'promoted';
// 'promoted' drops what a scavenge collected: what is left outlived the young generation, which is
// what the mark-compacts (the half-load tail) have to collect.
const promotedOnly = process.env.PROFILE_KIND === 'promoted';
const session = new Session();
session.connect();
process.on('SIGUSR2', () => {
  if (heap) session.post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: !promotedOnly });
  else session.post('Profiler.enable', () => session.post('Profiler.start'));
});
process.on('exit', () => {
  // inspector calls on the same thread answer synchronously, so this runs before the process ends
  session.post(heap ? 'HeapProfiler.stopSampling' : 'Profiler.stop', (err, result) => {
    if (err) process.stderr.write(`profiler-preload: the profiler did not stop: ${err.message}\n`);
    else writeFileSync(process.env.PROFILE_OUT!, JSON.stringify((result as { profile: unknown }).profile));
  });
});
