import { ed25519 } from '@noble/curves/ed25519.js';
import { expect, it } from 'vitest';
import {
  makeHistoryEntry,
  toBase64url,
  verifyHistory,
  type AttestationHistoryEntry,
  type AttestationKeyRecord,
  type Ports,
} from '@strongroom/core';
import type { Setup } from './accounts-sessions.js';
import { describeContract } from './registry.js';

async function using<K extends keyof Ports>(
  setup: Setup,
  key: K,
  body: (store: Ports[K]) => Promise<void>,
): Promise<void> {
  const { ports, cleanup } = await setup();
  try {
    await body(ports[key]);
  } finally {
    await cleanup?.();
  }
}

const DAY = 86_400_000;
const T0 = Date.parse('2026-06-01T00:00:00Z');
const policy = { build: { min: '2026-03-01', max: '2026-11-01' }, noticeMs: 90 * DAY };

export function describeDeprecationStoreContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'deprecations', 'DeprecationStore', () => {
    it('starts empty, records admitted announcements and lists them back exactly', () =>
      using(setup, 'deprecations', async (s) => {
        expect(await s.listDeprecations()).toEqual([]);
        const a = { minProtocolVersion: '2026-06-01', announcedAt: T0, effectiveAt: T0 + 90 * DAY };
        const b = { minProtocolVersion: '2026-09-01', announcedAt: T0 + 1, effectiveAt: T0 + 200 * DAY };
        expect(await s.announceDeprecation(a, policy)).toEqual({ ok: true, value: a });
        expect(await s.announceDeprecation(b, policy)).toEqual({ ok: true, value: b });
        const listed = (await s.listDeprecations()).sort((x, y) => x.effectiveAt - y.effectiveAt);
        expect(listed).toEqual([a, b]);
      }));
    it('judges with the core rule against what is stored, writing nothing when it refuses', () =>
      using(setup, 'deprecations', async (s) => {
        const a = { minProtocolVersion: '2026-08-01', announcedAt: T0, effectiveAt: T0 + 90 * DAY };
        expect((await s.announceDeprecation(a, policy)).ok).toBe(true);
        expect(
          await s.announceDeprecation(
            { ...a, minProtocolVersion: '2026-09-01', effectiveAt: T0 + 90 * DAY - 1 },
            policy,
          ),
        ).toMatchObject({ ok: false, code: 'error.deprecation.too_soon' });
        // Not raising the Min in force at its instant (the stored one already has) is refused.
        expect(
          await s.announceDeprecation(
            { minProtocolVersion: '2026-07-01', announcedAt: T0, effectiveAt: T0 + 100 * DAY },
            policy,
          ),
        ).toMatchObject({ ok: false, code: 'error.deprecation.invalid' });
        expect(await s.listDeprecations()).toEqual([a]);
      }));
    it('admits only one of two racing announcements that exclude each other', () =>
      using(setup, 'deprecations', async (s) => {
        const x = { minProtocolVersion: '2026-07-01', announcedAt: T0, effectiveAt: T0 + 100 * DAY };
        const y = { ...x, announcedAt: T0 + 1 };
        const results = await Promise.all([s.announceDeprecation(x, policy), s.announceDeprecation(y, policy)]);
        // Whichever lands first makes the other pointless (it would not raise the Min then): one is
        // judged against the other, never both against the empty list.
        expect(results.filter((r) => r.ok)).toHaveLength(1);
        expect(await s.listDeprecations()).toHaveLength(1);
      }));
  });
}

function key(seedByte: number, createdAt: number): AttestationKeyRecord {
  const seed = new Uint8Array(32).fill(seedByte);
  return {
    kid: `kid-${seedByte}`,
    privateKey: toBase64url(seed),
    publicKey: toBase64url(ed25519.getPublicKey(seed)),
    createdAt,
    retiredAt: null,
  };
}
const seedOf = (k: AttestationKeyRecord): Uint8Array => new Uint8Array(32).fill(Number(k.kid.slice(4)));
const entryFor = (
  last: AttestationHistoryEntry | null,
  k: AttestationKeyRecord,
  signer: AttestationKeyRecord,
): AttestationHistoryEntry =>
  makeHistoryEntry(
    last,
    { kid: k.kid, publicKey: k.publicKey, addedAt: Math.floor(k.createdAt / 1000) },
    seedOf(signer),
  );

export function describeAttestationKeyStoreContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'attestation', 'AttestationKeyStore', () => {
    it('appends the first key, then rotates: the old key retired at the instant, one entry per rotation', () =>
      using(setup, 'attestation', async (s) => {
        expect(await s.listAttestationHistory()).toEqual([]);
        const k1 = key(1, 1_000);
        const e1 = entryFor(null, k1, k1);
        expect(await s.appendAttestationKey(k1, e1, 1_000)).toBe('appended');
        const k2 = key(2, 5_000);
        const e2 = entryFor(e1, k2, k1);
        expect(await s.appendAttestationKey(k2, e2, 5_000)).toBe('appended');
        expect(await s.listAttestationHistory()).toEqual([e1, e2]);
        expect(verifyHistory(await s.listAttestationHistory()).ok).toBe(true);
        expect(await s.listAttestationKeys()).toEqual([{ ...k1, retiredAt: 5_000 }, k2]);
      }));
    it('refuses, writing nothing, an entry that does not extend the stored chain', () =>
      using(setup, 'attestation', async (s) => {
        const k1 = key(1, 1_000);
        const e1 = entryFor(null, k1, k1);
        const k2 = key(2, 2_000);
        const k3 = key(3, 3_000);
        // A second "first" entry, a wrong signer, a wrong prev, a tampered hash, a mismatched key.
        expect(await s.appendAttestationKey(k1, e1, 1_000)).toBe('appended');
        expect(await s.appendAttestationKey(k2, entryFor(null, k2, k2), 2_000)).toBe('stale');
        expect(await s.appendAttestationKey(k2, entryFor(e1, k2, k2), 2_000)).toBe('stale');
        expect(await s.appendAttestationKey(k2, { ...entryFor(e1, k2, k1), prev: 'f'.repeat(64) }, 2_000)).toBe(
          'stale',
        );
        expect(await s.appendAttestationKey(k2, { ...entryFor(e1, k2, k1), addedAt: 7 }, 2_000)).toBe('stale');
        expect(await s.appendAttestationKey(k3, entryFor(e1, k2, k1), 2_000)).toBe('stale');
        expect(await s.listAttestationHistory()).toEqual([e1]);
        expect(await s.listAttestationKeys()).toEqual([k1]);
      }));
    it('lets exactly one of two racing rotations from the same chain append', () =>
      using(setup, 'attestation', async (s) => {
        const k1 = key(1, 1_000);
        const e1 = entryFor(null, k1, k1);
        await s.appendAttestationKey(k1, e1, 1_000);
        const [k2, k3] = [key(2, 2_000), key(3, 2_000)];
        const outcomes = await Promise.all([
          s.appendAttestationKey(k2, entryFor(e1, k2, k1), 2_000),
          s.appendAttestationKey(k3, entryFor(e1, k3, k1), 2_000),
        ]);
        expect(outcomes.sort()).toEqual(['appended', 'stale']);
        expect(await s.listAttestationHistory()).toHaveLength(2);
        expect((await s.listAttestationKeys()).filter((k) => k.retiredAt === null)).toHaveLength(1);
      }));
    it('reseals a key only while it still holds the value the caller read, and changes nothing else', () =>
      using(setup, 'attestation', async (s) => {
        const k1 = key(1, 1_000);
        const e1 = entryFor(null, k1, k1);
        await s.appendAttestationKey(k1, e1, 1_000);
        expect(await s.resealAttestationKey(k1.kid, 'not what is stored', 'v1.x.y')).toBe(false);
        expect(await s.resealAttestationKey('kid-9', k1.privateKey, 'v1.x.y')).toBe(false);
        expect(await s.listAttestationKeys()).toEqual([k1]);
        // Two processes sealing the same raw key at once: one write lands.
        const outcomes = await Promise.all([
          s.resealAttestationKey(k1.kid, k1.privateKey, 'v1.a.a'),
          s.resealAttestationKey(k1.kid, k1.privateKey, 'v1.b.b'),
        ]);
        expect(outcomes.filter(Boolean)).toHaveLength(1);
        const [stored] = await s.listAttestationKeys();
        expect(stored).toEqual({ ...k1, privateKey: outcomes[0] ? 'v1.a.a' : 'v1.b.b' });
        expect(await s.listAttestationHistory()).toEqual([e1]);
      }));
  });
}

export function describeRegistrationAllowlistContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'registration-allowlist', 'RegistrationAllowlist', () => {
    it('adds, lists in entry order, finds exact entries and removes; a repeat add keeps the first instant', () =>
      using(setup, 'registration', async (s) => {
        expect(await s.listAllowedRegistrations()).toEqual([]);
        expect(await s.findAllowedRegistrations(['ann@example.org', '@example.org'])).toEqual([]);
        expect(await s.allowRegistration('@example.org', T0)).toBe(true);
        expect(await s.allowRegistration('ann@example.org', T0 + 1)).toBe(true);
        expect(await s.allowRegistration('@example.org', T0 + 2)).toBe(false);
        expect(await s.listAllowedRegistrations()).toEqual([
          { entry: '@example.org', addedAt: T0 },
          { entry: 'ann@example.org', addedAt: T0 + 1 },
        ]);
        expect(
          (
            await s.findAllowedRegistrations(['bob@example.org', '@example.org', 'ann@example.org', '@EXAMPLE.org'])
          ).sort(),
        ).toEqual(['@example.org', 'ann@example.org']);
        expect(await s.findAllowedRegistrations([])).toEqual([]);
        expect(await s.disallowRegistration('@example.org')).toBe(true);
        expect(await s.disallowRegistration('@example.org')).toBe(false);
        expect(await s.findAllowedRegistrations(['@example.org', 'ann@example.org'])).toEqual(['ann@example.org']);
      }));
    it('a change made through one connection is seen through another at its next read', async () => {
      const { ports, connect, cleanup } = await setup();
      try {
        const other = await connect();
        expect(await ports.registration.allowRegistration('@family.example', T0)).toBe(true);
        expect(await other.registration.findAllowedRegistrations(['@family.example'])).toEqual(['@family.example']);
        expect(await other.registration.disallowRegistration('@family.example')).toBe(true);
        expect(await ports.registration.findAllowedRegistrations(['@family.example'])).toEqual([]);
      } finally {
        await cleanup?.();
      }
    });
  });
}
