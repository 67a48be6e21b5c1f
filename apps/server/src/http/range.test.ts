import { describe, expect, it } from 'vitest';
import { resolveRange } from './range.js';

describe('resolveRange', () => {
  it('one range: first, middle, open, suffix, clamped past the end', () => {
    expect(resolveRange('bytes=0-0', 100)).toEqual({ kind: 'part', start: 0, end: 0 });
    expect(resolveRange('bytes=10-19', 100)).toEqual({ kind: 'part', start: 10, end: 19 });
    expect(resolveRange('bytes=90-', 100)).toEqual({ kind: 'part', start: 90, end: 99 });
    expect(resolveRange('bytes=-10', 100)).toEqual({ kind: 'part', start: 90, end: 99 });
    expect(resolveRange('bytes=-1000', 100)).toEqual({ kind: 'part', start: 0, end: 99 });
    expect(resolveRange('bytes=50-5000', 100)).toEqual({ kind: 'part', start: 50, end: 99 });
    expect(resolveRange(' Bytes = 1-2 ', 100)).toEqual({ kind: 'part', start: 1, end: 2 });
  });
  it('unsatisfiable: starting at or past the end, an empty suffix, any range of an empty blob', () => {
    expect(resolveRange('bytes=100-', 100)).toEqual({ kind: 'unsatisfiable' });
    expect(resolveRange('bytes=100-200', 100)).toEqual({ kind: 'unsatisfiable' });
    expect(resolveRange('bytes=-0', 100)).toEqual({ kind: 'unsatisfiable' });
    expect(resolveRange('bytes=0-', 0)).toEqual({ kind: 'unsatisfiable' });
    expect(resolveRange('bytes=-5', 0)).toEqual({ kind: 'unsatisfiable' });
    expect(resolveRange('bytes=99999999999999999999-', 100)).toEqual({ kind: 'unsatisfiable' });
  });
  it('ignored (whole blob): none, another unit, malformed, reversed, several ranges', () => {
    for (const h of [
      undefined,
      'items=0-1',
      'bytes=a-b',
      'bytes=5-1',
      'bytes',
      'bytes=',
      'bytes=0-1,5-6',
      'bytes=0-1, -3',
      'bytes=--1',
      'bytes=1-2-3',
    ]) {
      expect(resolveRange(h, 100), String(h)).toEqual({ kind: 'whole' });
    }
  });
});
