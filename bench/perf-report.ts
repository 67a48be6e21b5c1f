/**
 * The summary bench:perf prints from `perf script` output: where the server's CPU went, each sample
 * charged to the nearest JavaScript function on its stack (V8 names compiled functions `JS:*name
 * file:line:column` under --perf-basic-prof), by function, by package, and for V8's slow paths;
 * with --floor, the server's profile set against its floor server's in µs of CPU per request.
 */

/**
 * V8's perf map (/tmp/perf-PID.map, `start size name` per line) as it stands at the end: V8 appends
 * a line whenever it places code, and code freed by the GC leaves its range to later code, so one
 * address can have several names. perf may resolve such an address to an older one (setup's code
 * named for the steady load's), so only the last line covering an address is kept.
 */
export function latestPerfMap(map: string): string {
  const kept: { start: number; end: number; line: string }[] = [];
  for (const line of map.split('\n')) {
    const [start, size] = line.split(' ', 2).map((hex) => parseInt(hex, 16));
    if (start === undefined || size === undefined || Number.isNaN(start) || Number.isNaN(size)) continue;
    const end = start + size;
    for (let i = kept.length - 1; i >= 0; i--) if (kept[i]!.start < end && start < kept[i]!.end) kept.splice(i, 1);
    kept.push({ start, end, line });
  }
  return kept
    .sort((a, b) => a.start - b.start)
    .map((k) => k.line)
    .join('\n');
}

/** One sample: its frames from the leaf outward, each as perf names the symbol. */
type Sample = string[];

/** V8's own work that a JavaScript function causes and a faster path would have avoided. */
const SLOW_PATH = /IC_Miss|IC_Slow|MigrateToMap|TransitionToDataProperty|Deoptimiz|NotifyDeoptimized/;
/** The optimizing compiler, which runs on V8's worker threads. */
const COMPILER = /PipelineCompilationJob|TurbofanCompilationJob|Maglev/;

const PACKAGES: [RegExp, string][] = [
  [/node_modules\/(pg|pg-pool|pg-protocol)\//, 'node-postgres'],
  [/node_modules\/drizzle-orm\//, 'drizzle'],
  [/node_modules\/@hono\/node-server\//, '@hono/node-server'],
  [/node_modules\/hono\//, 'hono'],
  [/node_modules\/valibot\//, 'valibot'],
  [/node_modules\/@noble\//, '@noble'],
  [/node_modules\/better-sqlite3\//, 'better-sqlite3'],
  [/node_modules\//, 'other packages'],
  [/apps\/server\//, 'apps/server'],
  [/packages\/([\w-]+)\//, 'packages/$1'],
  [/\/bench\//, 'bench (the floor server)'],
  [/node:_http|node:internal\/deps\/undici/, 'node http'],
  [/node:internal\/streams|node:net|node:internal\/stream_base/, 'node streams and sockets'],
  [/node:/, 'node other'],
];

function parse(script: string): Sample[] {
  const samples: Sample[] = [];
  for (const block of script.split('\n\n')) {
    const lines = block.split('\n').slice(1);
    // "    7f2a... symbol+0x1c (dso)": the symbol, without its offset.
    const frames = lines
      .map((line) => line.trim())
      .filter((line) => line.length > 0)
      .map((line) =>
        line
          .slice(line.indexOf(' ') + 1)
          .replace(/ \([^)]*\)$/, '')
          .replace(/\+0x[0-9a-f]+$/, ''),
      );
    if (frames.length > 0) samples.push(frames);
  }
  return samples;
}

/**
 * `JS:*create file:///…/packages/core/src/upload/service.ts:1:1006` → `create packages/core/src/upload/service.ts:1:1006`;
 * CommonJS modules (node-postgres) are named by their bare path.
 */
function jsName(frame: string): string {
  const name = frame
    .replace(/^JS:[*~^+-]?/, '')
    .replace(/(?:file:\/\/)?\/\S*?\/(node_modules|packages|apps|bench)\//, '$1/');
  return name.startsWith(' ') ? `(anonymous)${name}` : name;
}

export function packageOf(frame: string | undefined): string {
  if (frame === undefined) return 'no JavaScript on the stack (GC, compiler, libuv, kernel)';
  for (const [pattern, name] of PACKAGES) {
    const m = frame.match(pattern);
    if (m) return name.replace('$1', m[1] ?? '');
  }
  return 'other JavaScript';
}

function top(counts: Map<string, number>, total: number, n: number): string[] {
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([key, count]) => `${((100 * count) / total).toFixed(1).padStart(5)} %  ${key}`);
}

/** One profile's samples, counted by where each was charged: what is printed, or set against another. */
export interface Tally {
  samples: number;
  byFunction: Map<string, number>;
  byPackage: Map<string, number>;
  /** V8 slow-path samples, by the function that caused them. */
  slow: Map<string, number>;
  compiling: number;
}

export function tally(script: string): Tally {
  const samples = parse(script);
  const t: Tally = {
    samples: samples.length,
    byFunction: new Map(),
    byPackage: new Map(),
    slow: new Map(),
    compiling: 0,
  };
  const add = (m: Map<string, number>, key: string) => m.set(key, (m.get(key) ?? 0) + 1);
  for (const frames of samples) {
    const at = frames.findIndex((f) => f.startsWith('JS:'));
    const js = at === -1 ? undefined : frames[at];
    add(t.byFunction, js === undefined ? '(no JavaScript on the stack)' : jsName(js));
    add(t.byPackage, packageOf(js));
    if (js !== undefined && frames.slice(0, at).some((f) => SLOW_PATH.test(f))) add(t.slow, jsName(js));
    if (frames.some((f) => COMPILER.test(f))) t.compiling++;
  }
  return t;
}

export function summarise(script: string, rows = 25): string[] {
  const t = tally(script);
  const total = Math.max(t.samples, 1);
  const slowTotal = [...t.slow.values()].reduce((a, b) => a + b, 0);
  return [
    `${t.samples} samples of the server process; each charged to the nearest JavaScript function on its stack`,
    '',
    'by function:',
    ...top(t.byFunction, total, rows),
    '',
    'by package:',
    ...top(t.byPackage, total, rows),
    '',
    `V8 slow paths (inline-cache misses, shape changes, deoptimizations): ${((100 * slowTotal) / total).toFixed(1)} % in all, by the function that caused them:`,
    ...top(t.slow, total, 10),
    '',
    `the optimizing compiler (V8's worker threads): ${((100 * t.compiling) / total).toFixed(1)} %`,
  ];
}

/**
 * Sample counts as µs of CPU per request: each key's share of the samples times the process's CPU
 * per request (from /proc). Shares alone cannot be set side by side: the server and its floor spend
 * different CPU per request, so the same share is a different cost.
 */
export function microsPerRequest(
  counts: Map<string, number>,
  samples: number,
  cpuPerRequest: number,
): Map<string, number> {
  return new Map([...counts].map(([key, n]) => [key, samples === 0 ? 0 : (n / samples) * cpuPerRequest]));
}

export interface Difference {
  key: string;
  server: number;
  floor: number;
  /** server − floor: what the server spends on this key beyond its floor. */
  extra: number;
}

/** Every key of either side, in µs per request, the server's largest extra cost first. */
export function difference(server: Map<string, number>, floor: Map<string, number>): Difference[] {
  const keys = new Set([...server.keys(), ...floor.keys()]);
  return [...keys]
    .map((key) => ({ key, server: server.get(key) ?? 0, floor: floor.get(key) ?? 0 }))
    .map((d) => ({ ...d, extra: d.server - d.floor }))
    .sort((a, b) => b.extra - a.extra);
}

/** One side of a comparison: its profile and its process CPU per request. */
export interface Side {
  tally: Tally;
  cpuPerRequest: number;
}

/**
 * The server against its floor, in µs of CPU per request: by package (where the server's extra µs
 * go), then the server's functions the floor never ran (no floor sample): the server's own work.
 */
export function compareToFloor(server: Side, floor: Side, rows = 20): string[] {
  const us = (x: number) => x.toFixed(1).padStart(7);
  const perRequest = (s: Side, pick: (t: Tally) => Map<string, number>) =>
    microsPerRequest(pick(s.tally), s.tally.samples, s.cpuPerRequest);
  const byPackage = difference(
    perRequest(server, (t) => t.byPackage),
    perRequest(floor, (t) => t.byPackage),
  );
  const serverOnly = difference(
    perRequest(server, (t) => t.byFunction),
    perRequest(floor, (t) => t.byFunction),
  ).filter((d) => floor.tally.byFunction.get(d.key) === undefined);
  return [
    `µs of CPU per request, by package (each side's sample share × its process CPU per request; ${server.tally.samples} server and ${floor.tally.samples} floor samples):`,
    '',
    '| package | server | floor | server − floor |',
    '|---|---:|---:|---:|',
    ...byPackage.map((d) => `| ${d.key} | ${us(d.server)} | ${us(d.floor)} | ${us(d.extra)} |`),
    `| all | ${us(server.cpuPerRequest)} | ${us(floor.cpuPerRequest)} | ${us(server.cpuPerRequest - floor.cpuPerRequest)} |`,
    '',
    `the server's functions the floor does not have, µs of CPU per request (${rows} largest):`,
    ...serverOnly.slice(0, rows).map((d) => `${us(d.server)} µs  ${d.key}`),
  ];
}

/** Each of a database's cumulative counters, as its growth between two readings per answered request. */
export function workPerRequest<K extends string>(
  before: Record<K, number>,
  after: Record<K, number>,
  requests: number,
): Record<K, number> {
  const out = {} as Record<K, number>;
  for (const key of Object.keys(before) as K[]) out[key] = (after[key] - before[key]) / Math.max(requests, 1);
  return out;
}
