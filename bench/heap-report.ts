import { difference, packageOf } from './perf-report.js';

/** V8's sampling heap profile (the inspector's HeapProfiler.SamplingHeapProfile), as far as it is read here. */
export interface HeapProfile {
  head: HeapNode;
}
interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  /** Bytes allocated by this function itself, at this place in the call tree (sampled). */
  selfSize: number;
  children: HeapNode[];
}

/** One side's allocations: bytes by allocating function and by package, and how many requests made them. */
export interface Allocations {
  byFunction: Map<string, number>;
  byPackage: Map<string, number>;
  total: number;
  requests: number;
}

/** `file:///…/packages/core/src/x.ts` → `packages/core/src/x.ts`, as perf-report names code. */
const shortUrl = (url: string) => url.replace(/^(?:file:\/\/)?\/\S*?\/(node_modules|packages|apps|bench)\//, '$1/');

/** Bytes each function allocated itself, summed over every place it was called from. */
export function allocations(profile: HeapProfile, requests: number): Allocations {
  const byFunction = new Map<string, number>();
  const byPackage = new Map<string, number>();
  let total = 0;
  const add = (m: Map<string, number>, key: string, bytes: number) => m.set(key, (m.get(key) ?? 0) + bytes);
  const stack: HeapNode[] = [profile.head];
  while (stack.length > 0) {
    const node = stack.pop()!;
    stack.push(...node.children);
    if (node.selfSize === 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    total += node.selfSize;
    // V8 and Node's native code (a Buffer's store, a string flattened) come without a script.
    add(
      byFunction,
      url === ''
        ? `${functionName || '(native)'} (V8 and Node internals)`
        : `${functionName || '(anonymous)'} ${shortUrl(url)}:${lineNumber + 1}`,
      node.selfSize,
    );
    add(byPackage, url === '' ? 'V8 and Node internals' : packageOf(url), node.selfSize);
  }
  return { byFunction, byPackage, total, requests };
}

/** The server's allocations beside its floor's, in bytes per answered request. */
export function compareAllocations(server: Allocations, floor: Allocations, rows = 25): string[] {
  const perRequest = (a: Allocations, m: Map<string, number>) =>
    new Map([...m].map(([k, v]) => [k, v / Math.max(a.requests, 1)]));
  const bytes = (x: number) => Math.round(x).toLocaleString('en-US').padStart(8);
  const byPackage = difference(perRequest(server, server.byPackage), perRequest(floor, floor.byPackage));
  const byFunction = difference(perRequest(server, server.byFunction), perRequest(floor, floor.byFunction));
  return [
    `bytes allocated per answered request, by package (${server.requests} server and ${floor.requests} floor requests sampled):`,
    '',
    '| package | server | floor | server − floor |',
    '|---|---:|---:|---:|',
    ...byPackage.map((d) => `| ${d.key} | ${bytes(d.server)} | ${bytes(d.floor)} | ${bytes(d.extra)} |`),
    `| all | ${bytes(server.total / Math.max(server.requests, 1))} | ${bytes(floor.total / Math.max(floor.requests, 1))} | ${bytes(server.total / Math.max(server.requests, 1) - floor.total / Math.max(floor.requests, 1))} |`,
    '',
    `the functions that allocate the most beyond the floor, bytes per request (${rows} largest):`,
    ...byFunction.slice(0, rows).map((d) => `${bytes(d.extra)} B  ${d.key}`),
  ];
}
