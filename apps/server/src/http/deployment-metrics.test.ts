import { describe, expect, it } from 'vitest';
import type { DeploymentTotals } from '@strongroom/core';
import { FakeClock, MemoryLogger } from '@strongroom/core/testing';
import { registerUser, testServer } from '@strongroom/tests';
import { DeploymentGauges, TOTALS_INTERVAL_MS } from './deployment-metrics.js';
import { HttpMetrics } from './metrics.js';

const TOTALS: DeploymentTotals = {
  accounts: 3,
  openSessions: 4,
  usedBytes: 500,
  reservedBytes: 40,
  storedBlobs: 2,
  storedBytes: 460,
  openUploads: 1,
};

/** An operator whose counts are counted, each answering the next totals. */
function countingOperator() {
  const op = {
    calls: 0,
    next: TOTALS,
    fail: false,
    totals: async () => {
      op.calls++;
      if (op.fail) throw new Error('database down');
      return op.next;
    },
  };
  return op;
}

const gauge = (text: string, name: string): number | null => {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? null : Number(line.split(' ')[1]);
};

describe('deployment totals on /metrics', () => {
  it('are counted at most once per interval by the clock, never by a scrape; a failed count keeps the last totals', async () => {
    const clock = new FakeClock();
    const metrics = new HttpMetrics();
    const operator = countingOperator();
    const logger = new MemoryLogger();
    const gauges = new DeploymentGauges({ metrics, operator, clock, logger });
    expect(gauge(await metrics.render(), 'strongroom_accounts')).toBeNull();
    await gauges.tick();
    for (let i = 0; i < 5; i++) await metrics.render();
    expect(operator.calls).toBe(1);
    const text = await metrics.render();
    expect([
      gauge(text, 'strongroom_accounts'),
      gauge(text, 'strongroom_sessions_open'),
      gauge(text, 'strongroom_quota_used_bytes'),
      gauge(text, 'strongroom_quota_reserved_bytes'),
      gauge(text, 'strongroom_blobs_stored'),
      gauge(text, 'strongroom_blobs_stored_bytes'),
      gauge(text, 'strongroom_uploads_open'),
    ]).toEqual([3, 4, 500, 40, 2, 460, 1]);
    expect(text).toContain('# TYPE strongroom_accounts gauge');
    expect(gauge(text, 'strongroom_deployment_totals_timestamp_seconds')).toBe(Math.floor(clock.now() / 1000));

    operator.next = { ...TOTALS, accounts: 9 };
    clock.advance(TOTALS_INTERVAL_MS - 1);
    await gauges.tick();
    expect(operator.calls).toBe(1);
    clock.advance(1);
    await gauges.tick();
    expect(operator.calls).toBe(2);
    expect(gauge(await metrics.render(), 'strongroom_accounts')).toBe(9);

    operator.fail = true;
    clock.advance(TOTALS_INTERVAL_MS);
    await gauges.tick();
    expect(operator.calls).toBe(3);
    expect(gauge(await metrics.render(), 'strongroom_accounts')).toBe(9);
    expect(logger.lines.some((l) => l.event === 'metrics.totals_failed')).toBe(true);
  });

  it('two ticks at once make one count', async () => {
    const operator = countingOperator();
    const gauges = new DeploymentGauges({
      metrics: new HttpMetrics(),
      operator,
      clock: new FakeClock(),
      logger: new MemoryLogger(),
    });
    await Promise.all([gauges.tick(), gauges.tick(), gauges.tick()]);
    expect(operator.calls).toBe(1);
  });

  it('count what the server holds, over its real stores', async () => {
    const s = await testServer();
    try {
      await registerUser(s.app);
      await registerUser(s.app);
      const gauges = new DeploymentGauges({
        metrics: s.deps.metrics,
        operator: s.deps.operator,
        clock: s.clock,
        logger: s.logger,
      });
      await gauges.tick();
      const text = await (await s.app.request('/metrics')).text();
      expect(gauge(text, 'strongroom_accounts')).toBe(2);
      expect(gauge(text, 'strongroom_sessions_open')).toBe(2);
      expect(gauge(text, 'strongroom_uploads_open')).toBe(0);
    } finally {
      await s.close();
    }
  });
});
