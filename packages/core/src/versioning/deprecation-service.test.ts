import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryDeprecationStore } from '../testing/memory-deprecations.js';
import { MemoryLogger } from '../testing/silent-logger.js';
import { effectiveWindow } from './deprecation.js';
import { DeprecationService } from './deprecation-service.js';

const DAY = 86_400_000;
const build = { min: '2026-03-01', max: '2026-11-01' };

describe('DeprecationService', () => {
  it('refuses an announcement sooner than the notice period with the earliest instant named, and stores nothing', async () => {
    const clock = new FakeClock();
    const store = new MemoryDeprecationStore();
    const s = new DeprecationService({
      store,
      clock,
      logger: new MemoryLogger(),
      policy: { build, noticeMs: 90 * DAY },
    });
    const r = await s.announce('2026-06-01', clock.now() + 89 * DAY);
    expect(r).toMatchObject({ ok: false, code: 'error.deprecation.too_soon' });
    expect(r.ok ? '' : r.detail).toContain(new Date(clock.now() + 90 * DAY).toISOString());
    expect(await store.listDeprecations()).toEqual([]);
    expect((await s.announce('2026-06-01', clock.now() + 90 * DAY)).ok).toBe(true);
  });

  it('a process that read the list before another process announced still enforces the new Min from its instant', async () => {
    // Property: whatever the notice, the announcement time and the moments the first process is
    // asked, its window always equals the window computed from the store's full list.
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1_000, max: 100 * DAY }),
        fc.integer({ min: 0, max: 10 * DAY }),
        fc.array(fc.integer({ min: 0, max: 200 * DAY }), { minLength: 1, maxLength: 12 }),
        async (noticeMs, announceAfter, asks) => {
          const clock = new FakeClock();
          const store = new MemoryDeprecationStore();
          const policy = { build, noticeMs };
          const serving = new DeprecationService({ store, clock, logger: new MemoryLogger(), policy });
          const operator = new DeprecationService({
            store,
            clock: new FakeClock(clock.now() + announceAfter),
            logger: new MemoryLogger(),
            policy,
          });
          await serving.refresh();
          const start = clock.now();
          expect((await operator.announce('2026-07-01', start + announceAfter + noticeMs)).ok).toBe(true);
          for (const at of [...asks].sort((a, b) => a - b)) {
            clock.set(start + at);
            const list = await serving.current(clock.now());
            expect(effectiveWindow(build, list, clock.now())).toEqual(
              effectiveWindow(build, await store.listDeprecations(), clock.now()),
            );
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('serves from the cache while it is fresh: no store read per request', async () => {
    const clock = new FakeClock();
    const store = new MemoryDeprecationStore();
    let reads = 0;
    const counting = {
      listDeprecations: () => (reads++, store.listDeprecations()),
      announceDeprecation: store.announceDeprecation.bind(store),
    };
    const s = new DeprecationService({
      store: counting,
      clock,
      logger: new MemoryLogger(),
      policy: { build, noticeMs: 90 * DAY },
    });
    await s.refresh();
    for (let i = 0; i < 1000; i++) expect(s.cached(clock.now())).not.toBeNull();
    expect(reads).toBe(1);
    clock.advance(s.refreshMs);
    expect(s.cached(clock.now())).not.toBeNull(); // still trusted, re-read in the background
    expect(reads).toBe(2);
  });
});
