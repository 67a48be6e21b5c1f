import { describe, expect, it } from 'vitest';
import type { UploadSessionRecord, UploadState } from '../ports/upload-sessions.js';
import {
  decideCancel,
  decideFinalize,
  decidePut,
  isContentHash,
  isFinalized,
  isInFlight,
  isOpenState,
  OPEN_STATES,
  TERMINAL_STATES,
  UPLOAD_STATES,
  uploadState,
} from './machine.js';

const HASH = 'a'.repeat(64);
const OTHER = 'b'.repeat(64);
const session = (over: Partial<UploadSessionRecord> = {}): UploadSessionRecord => ({
  id: 'u1',
  uploaderId: 'a',
  payerId: 'a',
  kind: 'original',
  declaredSize: 10,
  contentHash: null,
  sourcePeer: null,
  albumId: null,
  intentId: null,
  dropLinkIdHash: null,
  state: 'WaitingForProcessing',
  receivedSize: 10,
  receivedHash: HASH,
  assetId: null,
  createdAt: 0,
  expiresAt: 1_000,
  ...over,
});
const conflict = (state: UploadState) => ({ ok: false, code: 'error.conflict', data: { state } });

describe('upload session states', () => {
  it('three open states, four terminal ones; only Completed and Merged are finalized', () => {
    expect(OPEN_STATES).toEqual(['Pending', 'Uploading', 'WaitingForProcessing']);
    expect(TERMINAL_STATES).toEqual(['Completed', 'Merged', 'Cancelled', 'Expired']);
    expect(UPLOAD_STATES).toEqual([...OPEN_STATES, ...TERMINAL_STATES]);
    expect(UPLOAD_STATES.filter(isOpenState)).toEqual(OPEN_STATES);
    expect(UPLOAD_STATES.filter((state) => isFinalized({ state }))).toEqual(['Completed', 'Merged']);
  });

  it('an open session is Expired from its expiry on, whether or not a sweep wrote it; a terminal one keeps its state', () => {
    for (const state of OPEN_STATES) {
      expect(uploadState({ state, expiresAt: 1_000 }, 999)).toBe(state);
      expect(uploadState({ state, expiresAt: 1_000 }, 1_000)).toBe('Expired');
      expect(isInFlight({ state, expiresAt: 1_000 }, 999)).toBe(true);
      expect(isInFlight({ state, expiresAt: 1_000 }, 1_000)).toBe(false);
    }
    for (const state of TERMINAL_STATES) {
      expect(uploadState({ state, expiresAt: 1_000 }, 5_000)).toBe(state);
      expect(isInFlight({ state, expiresAt: 1_000 }, 0)).toBe(false);
    }
  });

  it('a content hash is 64 lower-case hex digits, nothing around them', () => {
    expect(isContentHash(HASH)).toBe(true);
    expect(isContentHash('0123456789abcdef'.repeat(4))).toBe(true);
    for (const bad of [
      'A'.repeat(64),
      'a'.repeat(63),
      'a'.repeat(65),
      ` ${'a'.repeat(63)}`,
      `${HASH}\n`,
      'g'.repeat(64),
    ])
      expect(isContentHash(bad)).toBe(false);
  });
});

describe('put, finalize and cancel', () => {
  it('bytes may be sent and a session cancelled only while it is open', () => {
    for (const decide of [decidePut, decideCancel]) {
      expect(decide(session({ state: 'Pending' }), 999)).toEqual({ ok: true, value: undefined });
      expect(decide(session({ state: 'Pending' }), 1_000)).toMatchObject(conflict('Expired'));
      expect(decide(session({ state: 'Cancelled' }), 0)).toMatchObject(conflict('Cancelled'));
      expect(decide(session({ state: 'Merged' }), 0)).toMatchObject({ detail: 'The upload session is Merged.' });
    }
  });

  it('finalize needs the received bytes, hashing to the hash given and to the one announced', () => {
    expect(decideFinalize(session(), HASH, 999)).toEqual({ ok: true, value: { size: 10, done: false } });
    expect(decideFinalize(session({ contentHash: HASH }), HASH, 0)).toMatchObject({ ok: true });
    expect(decideFinalize(session({ state: 'Uploading' }), HASH, 0)).toMatchObject(conflict('Uploading'));
    const noBytes = { ...conflict('WaitingForProcessing'), detail: 'No bytes have been received for this upload yet.' };
    expect(decideFinalize(session({ receivedHash: null }), HASH, 0)).toMatchObject(noBytes);
    expect(decideFinalize(session({ receivedSize: null }), HASH, 0)).toMatchObject(noBytes);
    const announced = decideFinalize(session({ contentHash: OTHER }), HASH, 0);
    expect(announced).toMatchObject(conflict('WaitingForProcessing'));
    expect(announced).toMatchObject({ detail: 'The content hash differs from the one announced at creation.' });
    const mismatch = decideFinalize(session(), OTHER, 0);
    expect(mismatch).toMatchObject({
      ...conflict('WaitingForProcessing'),
      detail: 'The content hash does not match the bytes received.',
    });
    expect(decideFinalize(session(), HASH, 1_000)).toMatchObject(conflict('Expired'));
    expect(decideFinalize(session({ state: 'Cancelled' }), HASH, 0)).toMatchObject({
      ...conflict('Cancelled'),
      detail: 'The upload session is Cancelled.',
    });
  });

  it('finalize again with the same bytes answers the session as it stands; with other bytes it conflicts', () => {
    for (const state of ['Completed', 'Merged'] as const) {
      expect(decideFinalize(session({ state }), HASH, 5_000)).toEqual({ ok: true, value: { size: 10, done: true } });
      expect(decideFinalize(session({ state }), OTHER, 0)).toMatchObject(conflict(state));
      expect(decideFinalize(session({ state, receivedSize: null }), HASH, 0)).toMatchObject(conflict(state));
    }
  });
});
