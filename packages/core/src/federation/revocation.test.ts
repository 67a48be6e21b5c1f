import { describe, expect, it } from 'vitest';
import { inRevocationWindow, REVOCATION_WINDOW_MS } from './revocation.js';

describe('the 24-hour revocation window', () => {
  it('holds revocations younger than 24 hours and nothing older, computed from now', () => {
    const now = Date.parse('2026-11-21T10:00:00.000Z');
    expect(inRevocationWindow(now, now)).toBe(true);
    expect(inRevocationWindow(now - REVOCATION_WINDOW_MS + 1, now)).toBe(true);
    expect(inRevocationWindow(now - REVOCATION_WINDOW_MS, now)).toBe(false);
    expect(inRevocationWindow(now + 1, now)).toBe(false);
  });
});
