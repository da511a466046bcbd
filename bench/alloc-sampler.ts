// Preloaded into the gateway by `npm run bench:profile -- --heap`: V8's sampling heap profiler,
// started on SIGUSR2 (after the warm-up), counting objects the garbage collector already took too
// (what a request allocates, not what is still alive), written to $ALLOC_PROFILE on exit.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const session = new Session();
session.connect();
process.on('SIGUSR2', () => {
  session.post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
});
process.on('exit', () => {
  // inspector calls on the same thread answer synchronously, so this runs before the process ends
  session.post('HeapProfiler.stopSampling', (err, result) => {
    if (!err) writeFileSync(process.env.ALLOC_PROFILE!, JSON.stringify(result.profile));
  });
});
