import { expect, it } from 'vitest';
import { schemaIsCurrent } from '@strongroom/core';
import type { Setup } from './accounts-sessions.js';
import { describeContract } from './registry.js';

/** The readiness probe's port: a freshly opened store reads as current, and reading changes nothing. */
export function describeSchemaStatusContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'schema', 'SchemaStatus', () => {
    it("reads a freshly opened store as exactly at the build's schema, every time", async () => {
      const { ports, cleanup } = await setup();
      try {
        const first = await ports.schema.readSchemaStamps();
        for (const stamp of [first.build, first.database]) {
          expect(Number.isSafeInteger(stamp.version) && stamp.version >= 0).toBe(true);
          expect(Number.isSafeInteger(stamp.latestWhen) && stamp.latestWhen >= 0).toBe(true);
        }
        expect(first.database).toEqual(first.build);
        expect(schemaIsCurrent(first)).toBe(true);
        // Reading is side-effect free: a second read (after ordinary writes) is the same.
        await ports.accounts.createAccount({
          id: '0190d000-0000-7000-8000-000000000001',
          address: 'schema@example.org',
          addressKey: 'schema@example.org',
          passwordHash: 'hash',
          displayName: null,
          createdAt: 1_000,
          lockedAt: null,
          credentialsChangedAt: null,
        });
        expect(await ports.schema.readSchemaStamps()).toEqual(first);
      } finally {
        await cleanup?.();
      }
    });
  });
}
