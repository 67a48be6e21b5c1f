import { describe, expect, it } from 'vitest';
import {
  FakeClock,
  freshSession,
  MemoryDeviceStore,
  MemoryDiscoveryStore,
  MemoryStore,
  staleSession,
} from '../testing/index.js';
import { DiscoveryService } from './service.js';

describe('DiscoveryService', () => {
  async function setup(sessions = freshSession) {
    const accounts = new MemoryStore();
    const handles = new MemoryDiscoveryStore();
    const clock = new FakeClock();
    const over = (gate: typeof freshSession, lookupRate = 60) =>
      new DiscoveryService({
        handles,
        accounts,
        directories: new MemoryDeviceStore(),
        clock,
        baseUrl: 'https://photos.example',
        sessions: gate,
        buckets: handles,
        lookupRate,
      });
    const service = over(sessions);
    const id = '0190f000-0000-7000-8000-000000000001';
    await accounts.createAccount({
      id,
      address: 'a@x',
      addressKey: 'a@x',
      passwordHash: null,
      displayName: 'Ann',
      createdAt: 0,
      lockedAt: null,
      credentialsChangedAt: null,
    });
    return { service, id, over, clock, handles };
  }

  it('claims, refuses a bad name, and shows the handle', async () => {
    const { service, id } = await setup();
    expect(await service.handleOf(id)).toBeNull();
    expect(await service.claim({ accountId: id, sessionId: 's' }, 'Ann')).toMatchObject({
      ok: false,
      code: 'error.request.invalid',
    });
    expect(await service.claim({ accountId: id, sessionId: 's' }, 'ann')).toEqual({
      ok: true,
      value: { handle: 'ann@photos.example' },
    });
    expect(await service.claim({ accountId: id, sessionId: 's' }, 'other')).toMatchObject({
      ok: false,
      code: 'error.discovery.handle_fixed',
    });
    expect(await service.handleOf(id)).toBe('ann@photos.example');
  });

  it('a stale session claims no handle and publishes or withdraws nothing', async () => {
    const fresh = await setup();
    await fresh.service.claim({ accountId: fresh.id, sessionId: 's' }, 'ann');
    const stale = fresh.over(staleSession);
    expect(await stale.claim({ accountId: fresh.id, sessionId: 's' }, 'bob')).toMatchObject({
      ok: false,
      code: 'error.auth.reauthentication_required',
    });
    expect(await stale.setPublished({ accountId: fresh.id, sessionId: 's' }, true)).toMatchObject({
      ok: false,
      code: 'error.auth.reauthentication_required',
    });
    expect(await fresh.service.webfinger('acct:ann@photos.example')).toMatchObject({
      ok: false,
      code: 'error.not_found',
    });
    const empty = await setup(staleSession);
    expect(await empty.service.claim({ accountId: empty.id, sessionId: 's' }, 'ann')).toMatchObject({
      ok: false,
      code: 'error.auth.reauthentication_required',
    });
    expect(await empty.service.handleOf(empty.id)).toBeNull();
  });

  it("bounds each account's lookups: a burst of the rate, then 429 with the wait; the acting owner draws from its own budget; other accounts are untouched", async () => {
    const { over, clock } = await setup();
    const a = over(freshSession, 3);
    // A second process over the same store draws from the same bucket.
    const b = over(freshSession, 3);
    const ann = { accountId: 'ann', sessionId: 's1' };
    for (const service of [a, b, a]) expect(await service.admitLookup(ann)).toEqual({ ok: true, value: undefined });
    expect(await b.admitLookup(ann)).toMatchObject({
      ok: false,
      code: 'error.request.too_many',
      data: { retry_after_s: 20 },
    });
    // Acting as a sponsored account changes whose budget it is not: Ann's, spent.
    expect(await a.admitLookup({ accountId: 'sponsored', sessionId: 's1', actingOwnerId: 'ann' })).toMatchObject({
      ok: false,
      code: 'error.request.too_many',
    });
    expect((await a.admitLookup({ accountId: 'bob', sessionId: 's2' })).ok).toBe(true);
    clock.advance(20_000);
    expect((await a.admitLookup(ann)).ok).toBe(true);
    expect((await a.admitLookup(ann)).ok).toBe(false);
  });

  it('answers WebFinger only for a published handle of this host, the same "no" otherwise', async () => {
    const { service, id } = await setup();
    expect(await service.setPublished({ accountId: id, sessionId: 's' }, true)).toMatchObject({
      ok: false,
      code: 'error.discovery.no_handle',
    });
    await service.claim({ accountId: id, sessionId: 's' }, 'ann');
    const no = await service.webfinger('acct:ann@photos.example');
    expect(no).toMatchObject({ ok: false, code: 'error.not_found' });
    expect(await service.webfinger('acct:nobody@photos.example')).toEqual(no);
    expect(await service.webfinger('acct:ann@elsewhere.example')).toEqual(no);
    await service.setPublished({ accountId: id, sessionId: 's' }, true);
    expect(await service.webfinger('acct:ann@photos.example')).toEqual({
      ok: true,
      value: { subject: 'acct:ann@photos.example', displayName: 'Ann' },
    });
    expect(await service.webfinger('acct:ann@elsewhere.example')).toEqual(no);
    expect(await service.webfinger('ann@photos.example')).toMatchObject({ ok: false, code: 'error.request.invalid' });
  });
});
