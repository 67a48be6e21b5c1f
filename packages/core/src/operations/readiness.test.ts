import { describe, expect, it } from 'vitest';
import { CoreError } from '../errors.js';
import type { SchemaStamps } from '../ports/schema-status.js';
import { checkReadiness, schemaIsCurrent } from './readiness.js';

const at = (version: number, latestWhen: number) => ({ version, latestWhen });
const status = (stamps: SchemaStamps | Error) => ({
  readSchemaStamps: async () => {
    if (stamps instanceof Error) throw stamps;
    return stamps;
  },
});

describe('readiness', () => {
  it("is ready only when the database is at exactly the build's schema", async () => {
    expect(await checkReadiness(status({ build: at(3, 30), database: at(3, 30) }))).toEqual({
      ok: true,
      value: undefined,
    });
    expect(schemaIsCurrent({ build: at(3, 30), database: at(2, 20) })).toBe(false);
    expect(schemaIsCurrent({ build: at(3, 30), database: at(4, 40) })).toBe(false);
    // Same count, different newest migration: another build's history.
    expect(schemaIsCurrent({ build: at(3, 30), database: at(3, 31) })).toBe(false);
  });

  it('refuses with error.store.unavailable when behind, ahead or silent, naming both versions', async () => {
    const behind = await checkReadiness(status({ build: at(3, 30), database: at(2, 20) }));
    expect(behind).toMatchObject({ ok: false, code: 'error.store.unavailable' });
    expect(behind.ok ? '' : behind.detail).toMatch(/version 2.*version 3/);
    expect(await checkReadiness(status({ build: at(3, 30), database: at(4, 40) }))).toMatchObject({
      ok: false,
      code: 'error.store.unavailable',
    });
    expect(await checkReadiness(status(new Error('connection refused')))).toMatchObject({
      ok: false,
      code: 'error.store.unavailable',
      detail: 'The database does not answer.',
      data: { dependency: 'database' },
    });
    // The blob store is asked once the database is ready, and named when it fails.
    const answering = { has: async () => false };
    const down = {
      has: async (): Promise<boolean> => {
        throw new Error('connect ECONNREFUSED');
      },
    };
    expect(await checkReadiness(status({ build: at(3, 30), database: at(3, 30) }), answering)).toEqual({
      ok: true,
      value: undefined,
    });
    expect(await checkReadiness(status({ build: at(3, 30), database: at(3, 30) }), down)).toMatchObject({
      ok: false,
      code: 'error.store.unavailable',
      detail: 'The blob store does not answer.',
      data: { dependency: 'blob_store' },
    });
  });
  it('names the cause a store reports: refused credentials are not an outage, and a store that does not say is "does not answer"', async () => {
    const current = status({ build: at(3, 30), database: at(3, 30) });
    const failing = (fault?: 'unreachable' | 'credentials' | 'failed') => ({
      has: async (): Promise<boolean> => {
        throw new CoreError(
          'error.store.unavailable',
          'object store: checking a blob failed',
          fault === undefined ? {} : { fault },
        );
      },
    });
    expect(await checkReadiness(current, failing('credentials'))).toMatchObject({
      ok: false,
      code: 'error.store.unavailable',
      detail: "The blob store refuses this server's credentials (none found, or not allowed to read the bucket).",
      data: { dependency: 'blob_store', reason: 'credentials' },
    });
    expect(await checkReadiness(current, failing('unreachable'))).toMatchObject({
      detail: 'The blob store does not answer.',
      data: { dependency: 'blob_store', reason: 'unreachable' },
    });
    expect(await checkReadiness(current, failing('failed'))).toMatchObject({
      detail: 'The blob store answers with an error.',
      data: { dependency: 'blob_store', reason: 'failed' },
    });
    expect(await checkReadiness(current, failing())).toMatchObject({
      detail: 'The blob store does not answer.',
      data: { dependency: 'blob_store', reason: 'unreachable' },
    });

    const database = (fault: 'unreachable' | 'credentials') => ({
      readSchemaStamps: async (): Promise<never> => {
        throw new CoreError('error.store.unavailable', 'reading the schema stamps failed', { fault });
      },
    });
    expect(await checkReadiness(database('credentials'))).toMatchObject({
      detail: "The database refuses this server's credentials.",
      data: { dependency: 'database', reason: 'credentials' },
    });
    expect(await checkReadiness(database('unreachable'))).toMatchObject({
      detail: 'The database does not answer.',
      data: { dependency: 'database', reason: 'unreachable' },
    });
  });
});
