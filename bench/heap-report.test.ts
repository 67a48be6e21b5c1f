import { describe, expect, it } from 'vitest';
import { allocations, compareAllocations, type HeapProfile } from './heap-report.js';

const node = (
  functionName: string,
  url: string,
  selfSize: number,
  children: HeapProfile['head'][] = [],
): HeapProfile['head'] => ({
  callFrame: { functionName, url, lineNumber: 9 },
  selfSize,
  children,
});
const create = 'file:///w/packages/core/src/upload/service.ts';
const profile: HeapProfile = {
  head: node('(root)', '', 0, [
    node('route', 'file:///w/apps/server/src/routes/uploads.ts', 100, [
      node('create', create, 300),
      node('parse', 'file:///w/node_modules/valibot/dist/index.js', 50),
    ]),
    node('other', 'file:///w/apps/server/src/app.ts', 0, [node('create', create, 200)]),
    node('(V8 API)', '', 40),
  ]),
};

describe('allocations', () => {
  it("sums each function's own bytes over every place it was called from, by function and by package", () => {
    const a = allocations(profile, 10);
    expect(a.total).toBe(690);
    expect(a.requests).toBe(10);
    expect(a.byFunction.get('create packages/core/src/upload/service.ts:10')).toBe(500);
    expect(a.byFunction.get('(V8 API) (V8 and Node internals)')).toBe(40);
    expect(Object.fromEntries(a.byPackage)).toEqual({
      'packages/core': 500,
      'apps/server': 100,
      valibot: 50,
      'V8 and Node internals': 40,
    });
  });
});

describe('compareAllocations', () => {
  it('sets both sides side by side per request, the largest extra first', () => {
    const server = allocations(profile, 10);
    const floor = allocations(
      { head: node('(root)', '', 0, [node('route', 'file:///w/bench/floor-server.ts', 200)]) },
      20,
    );
    const lines = compareAllocations(server, floor);
    expect(lines).toContain('| packages/core |       50 |        0 |       50 |');
    expect(lines).toContain('| bench (the floor server) |        0 |       10 |      -10 |');
    expect(lines).toContain('| all |       69 |       10 |       59 |');
    expect(lines.find((l) => l.endsWith('create packages/core/src/upload/service.ts:10'))).toBe(
      '      50 B  create packages/core/src/upload/service.ts:10',
    );
  });
});
