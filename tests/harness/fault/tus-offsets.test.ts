import { describe, expect, it } from 'vitest';
import { TusOffsets } from './tus-offsets.js';

describe("the load's model of a tus upload's offset", () => {
  it('after two unanswered PATCHes at one offset, either may be the one that landed', () => {
    const u = new TusOffsets(238);
    u.unanswered(238); // the whole upload: it landed, but its answer was lost
    u.unanswered(121); // refused by the server (the upload was full), its answer lost too
    expect(u.possible()).toContain(238);
    expect(u.possible()).toContain(121);
    expect(u.possible()).toContain(0);
  });

  it('never two of them, nor part of one', () => {
    const u = new TusOffsets(500);
    u.unanswered(100);
    u.unanswered(150);
    expect(u.possible().sort((a, b) => a - b)).toEqual([0, 100, 150]);
  });

  it('an offset the server names moves the model, and the PATCHes sent before it can no longer land', () => {
    const u = new TusOffsets(500);
    u.unanswered(100);
    u.unanswered(150);
    expect(u.told(150)).toBe(true);
    expect(u.possible()).toEqual([150]);
    expect(u.told(250)).toBe(false);
    expect(u.told(150)).toBe(true);
    u.unanswered(20);
    expect(u.possible()).toEqual([150, 170]);
  });

  it('a PATCH acknowledged after unanswered ones at its offset: only it landed', () => {
    const u = new TusOffsets(500);
    u.unanswered(100);
    u.acknowledged(40);
    expect(u.possible()).toEqual([40]);
  });

  it('an offset no PATCH could have left is not taken', () => {
    const u = new TusOffsets(500);
    u.unanswered(100);
    expect(u.told(99)).toBe(false);
    expect(u.offset).toBe(0);
    expect(u.untouched).toBe(false);
  });
});
