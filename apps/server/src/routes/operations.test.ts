import parsePrometheusTextFormat, { type ParsedFamily } from 'parse-prometheus-text-format';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PASSWORD, call, registerUser, testServer, type TestServer } from '@strongroom/tests';

let s: TestServer;
beforeEach(async () => {
  s = await testServer();
});
afterEach(async () => {
  await s.close();
});

describe('/healthz and /readyz', () => {
  it('answer without the protocol header, carrying the protocol headers like every response', async () => {
    for (const path of ['/healthz', '/readyz']) {
      const r = await call(s.app, 'GET', path, { version: null });
      expect(r).toMatchObject({ status: 200, body: { status: 'ok' } });
      expect(r.headers.get('x-svc-protocol-max')).toBe('2026-11-01');
    }
  });

  it('readiness goes 503 problem+json while the database is broken and back to 200 once repaired; liveness stays 200', async () => {
    s.breakStore();
    const down = await call(s.app, 'GET', '/readyz', { version: null });
    expect(down.status).toBe(503);
    expect(down.headers.get('content-type')).toBe('application/problem+json');
    expect(down.body).toMatchObject({
      status: 503,
      code: 'error.store.unavailable',
      type: 'about:blank',
      detail: 'The database does not answer.',
    });
    expect((await call(s.app, 'GET', '/healthz', { version: null })).status).toBe(200);
    s.mendStore();
    expect((await call(s.app, 'GET', '/readyz', { version: null })).status).toBe(200);
  });

  it('readiness is 503 when another build migrated the database further, naming both versions', async () => {
    s.db
      .prepare('INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)')
      .run('from-a-newer-build', Date.parse('2099-01-01'));
    const r = await call(s.app, 'GET', '/readyz', { version: null });
    expect(r.status).toBe(503);
    expect(r.body.detail).toMatch(/schema is at version \d+; this build expects version \d+/);
    s.db.prepare('DELETE FROM __drizzle_migrations WHERE hash = ?').run('from-a-newer-build');
    expect((await call(s.app, 'GET', '/readyz', { version: null })).status).toBe(200);
  });
});

describe('/metrics', () => {
  const LATENCY = 'strongroom_http_request_duration_seconds';
  /**
   * The exposition parsed by parse-prometheus-text-format. That parser folds a histogram's series
   * into one as if it had no labels, so the latency family is parsed with its TYPE line dropped:
   * its _bucket, _sum and _count series then come back as plain samples with all their labels.
   */
  async function scrape(): Promise<ParsedFamily[]> {
    const r = await s.app.request('/metrics');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await r.text();
    expect(text).toContain(`# TYPE ${LATENCY} histogram`);
    return parsePrometheusTextFormat(text.replace(`# TYPE ${LATENCY} histogram\n`, ''));
  }
  /** A family's samples (untyped series come back as one family per run of lines: joined here). */
  const family = (families: ParsedFamily[], name: string): ParsedFamily => {
    const found = families.filter((x) => x.name === name);
    if (found.length === 0) throw new Error(`no metric family ${name}`);
    return { ...found[0]!, metrics: found.flatMap((f) => f.metrics) };
  };
  const sample = (f: ParsedFamily, labels: Record<string, string>) =>
    f.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));

  it('counts requests by route template and status, times them, and counts sign-ins, refusals and database errors', async () => {
    const user = await registerUser(s.app);
    const sessions = await call(s.app, 'GET', '/v1/auth/sessions', { token: user.access_token });
    expect(sessions.status).toBe(200);
    await call(s.app, 'DELETE', `/v1/auth/sessions/${sessions.body.sessions[0].session_id}`, {
      token: user.access_token,
    });
    expect(
      (await call(s.app, 'POST', '/v1/auth/login', { body: { address: user.address, password: PASSWORD } })).status,
    ).toBe(200);
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/login', {
          body: { address: user.address, password: 'not the password at all' },
        })
      ).status,
    ).toBe(401);
    expect((await call(s.app, 'GET', '/v1/auth/sessions', { token: 'garbage' })).status).toBe(401);
    expect((await call(s.app, 'GET', '/v1/no/such/thing')).status).toBe(404);
    expect((await call(s.app, 'GET', '/v1/auth/sessions', { version: null })).status).toBe(426);
    s.breakStore();
    expect((await call(s.app, 'GET', '/readyz', { version: null })).status).toBe(503);
    s.mendStore();

    const families = await scrape();
    const requests = family(families, 'strongroom_http_requests_total');
    expect(requests.type).toBe('COUNTER');
    expect(sample(requests, { method: 'GET', route: '/v1/auth/sessions', status: '200' })?.value).toBe('1');
    // Refused before reaching the handler (bad token, missing protocol header): still under the template.
    expect(sample(requests, { method: 'GET', route: '/v1/auth/sessions', status: '401' })?.value).toBe('1');
    expect(sample(requests, { method: 'GET', route: '/v1/auth/sessions', status: '426' })?.value).toBe('1');
    expect(sample(requests, { method: 'DELETE', route: '/v1/auth/sessions/{session_id}', status: '204' })?.value).toBe(
      '1',
    );
    expect(sample(requests, { route: 'unmatched', status: '404' })?.value).toBe('1');

    const login = { method: 'POST', route: '/v1/auth/login' };
    expect(sample(family(families, `${LATENCY}_count`), login)?.value).toBe('2');
    expect(Number(sample(family(families, `${LATENCY}_sum`), login)?.value)).toBeGreaterThan(0);
    const buckets = family(families, `${LATENCY}_bucket`).metrics.filter(
      (m) => m.labels?.route === login.route && m.labels.method === login.method,
    );
    expect(buckets.find((b) => b.labels?.le === '+Inf')?.value).toBe('2');
    // Cumulative: never decreasing towards +Inf.
    const counts = buckets.map((b) => Number(b.value));
    expect(counts).toEqual([...counts].sort((a, b) => a - b));

    const signIns = family(families, 'strongroom_sign_ins_total');
    expect(sample(signIns, { route: '/v1/auth/login', outcome: 'session' })?.value).toBe('1');
    expect(sample(signIns, { route: '/v1/auth/login', outcome: 'refused' })?.value).toBe('1');

    const refusals = family(families, 'strongroom_refusals_total');
    expect(sample(refusals, { code: 'error.auth.invalid_credentials' })?.value).toBe('1');
    expect(sample(refusals, { code: 'error.not_found' })?.value).toBe('1');
    expect(sample(refusals, { code: 'error.protocol.unsupported' })?.value).toBe('1');
    expect(family(families, 'strongroom_database_errors_total').metrics[0]?.value).toBe('1');
    // Process metrics ride along.
    expect(families.some((f) => f.name === 'strongroom_process_cpu_user_seconds_total')).toBe(true);
  });

  it('puts no account id, address, token, session id or path into any label', async () => {
    const user = await registerUser(s.app);
    const sessions = await call(s.app, 'GET', '/v1/auth/sessions', { token: user.access_token });
    const sessionId = sessions.body.sessions[0].session_id as string;
    await call(s.app, 'DELETE', `/v1/auth/sessions/${sessionId}`, { token: user.access_token });
    await call(s.app, 'GET', `/v1/assets/${sessionId}`, { token: user.access_token });
    await call(s.app, 'GET', `/v1/secret-${user.address}`);
    await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: user.session_token } });
    const accountId = JSON.parse(Buffer.from(user.access_token.split('.')[1]!, 'base64url').toString()).sub as string;

    const forbidden = [accountId, user.address, user.access_token, user.session_token, sessionId, PASSWORD, 'secret-'];
    const labels = (await scrape()).flatMap((f) => f.metrics.flatMap((m) => Object.values(m.labels ?? {})));
    expect(labels.length).toBeGreaterThan(10);
    for (const value of labels) {
      for (const secret of forbidden) expect(value).not.toContain(secret);
      // Route labels are declared templates or "unmatched", never a concrete path with an id in it.
      expect(value).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-/);
    }
  });
});
