/**
 * Loaded into a server (NODE_OPTIONS=--import=…) by bench/heap.ts: V8's sampling heap profiler,
 * started by the first SIGUSR2 and stopped by the second, which writes the profile to HEAP_OUT.
 * Objects the garbage collector has already freed are kept in the profile: what a request costs
 * the collector is what it allocates, not what is still alive when the window ends.
 * Plain JavaScript, so a process that does not load tsx can load it too.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const session = new Session();
session.connect();
const post = (method, params = {}) =>
  new Promise((done, fail) => session.post(method, params, (error, result) => (error ? fail(error) : done(result))));
let sampling = false;
process.on('SIGUSR2', () => {
  const step = sampling
    ? post('HeapProfiler.stopSampling').then(({ profile }) =>
        writeFileSync(process.env.HEAP_OUT, JSON.stringify(profile)),
      )
    : post('HeapProfiler.enable').then(() =>
        // One sample per 256 bytes on average: a request allocates tens of kilobytes.
        post('HeapProfiler.startSampling', {
          samplingInterval: 256,
          includeObjectsCollectedByMajorGC: true,
          includeObjectsCollectedByMinorGC: true,
        }),
      );
  sampling = !sampling;
  step.catch((error) => process.stderr.write(`heap sampler: ${error}\n`));
});
