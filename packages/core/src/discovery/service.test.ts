import { describe, expect, it } from 'vitest';
import { FakeClock, MemoryDeviceStore, MemoryDiscoveryStore, MemoryStore } from '../testing/index.js';
import { DiscoveryService } from './service.js';

describe('DiscoveryService', () => {
  async function setup() {
    const accounts = new MemoryStore();
    const handles = new MemoryDiscoveryStore();
    const service = new DiscoveryService({ handles, accounts, directories: new MemoryDeviceStore(), clock: new FakeClock(), baseUrl: 'https://photos.example' });
    const id = '0190f000-0000-7000-8000-000000000001';
    await accounts.createAccount({ id, address: 'a@x', addressKey: 'a@x', passwordHash: null, displayName: 'Ann', createdAt: 0, lockedAt: null, credentialsChangedAt: null });
    return { service, id };
  }

  it('claims, refuses a bad name, and shows the handle', async () => {
    const { service, id } = await setup();
    expect(await service.handleOf(id)).toBeNull();
    expect(await service.claim({ accountId: id }, 'Ann')).toMatchObject({ ok: false, code: 'error.request.invalid' });
    expect(await service.claim({ accountId: id }, 'ann')).toEqual({ ok: true, value: { handle: 'ann@photos.example' } });
    expect(await service.claim({ accountId: id }, 'other')).toMatchObject({ ok: false, code: 'error.discovery.handle_fixed' });
    expect(await service.handleOf(id)).toBe('ann@photos.example');
  });

  it('answers WebFinger only for a published handle of this host, the same "no" otherwise', async () => {
    const { service, id } = await setup();
    expect(await service.setPublished({ accountId: id }, true)).toMatchObject({ ok: false, code: 'error.discovery.no_handle' });
    await service.claim({ accountId: id }, 'ann');
    const no = await service.webfinger('acct:ann@photos.example');
    expect(no).toMatchObject({ ok: false, code: 'error.not_found' });
    expect(await service.webfinger('acct:nobody@photos.example')).toEqual(no);
    expect(await service.webfinger('acct:ann@elsewhere.example')).toEqual(no);
    await service.setPublished({ accountId: id }, true);
    expect(await service.webfinger('acct:ann@photos.example')).toEqual({ ok: true, value: { subject: 'acct:ann@photos.example', displayName: 'Ann' } });
    expect(await service.webfinger('acct:ann@elsewhere.example')).toEqual(no);
    expect(await service.webfinger('ann@photos.example')).toMatchObject({ ok: false, code: 'error.request.invalid' });
  });
});
