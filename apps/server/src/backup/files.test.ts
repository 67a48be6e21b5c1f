import { describe, expect, it } from 'vitest';
import { within } from './files.js';

describe('within', () => {
  it('takes a child whose name starts with two dots as inside', () => {
    expect(within('/srv/data/..bk', '/srv/data')).toBe(true);
    expect(within('/srv/data/...', '/srv/data')).toBe(true);
    expect(within('/srv/data/a/..b', '/srv/data')).toBe(true);
  });
  it('takes the directory itself and what lies under it as inside, anything else as outside', () => {
    expect(within('/srv/data', '/srv/data')).toBe(true);
    expect(within('/srv/data/blobs/x', '/srv/data')).toBe(true);
    expect(within('/srv', '/srv/data')).toBe(false);
    expect(within('/srv/data-backup', '/srv/data')).toBe(false);
    expect(within('/srv/other/..bk', '/srv/data')).toBe(false);
  });
});
