import { describe, expect, it } from 'vitest';
import { compareToFloor, difference, microsPerRequest, tally, workPerRequest } from './perf-report.js';

/** `perf script` output: one block per sample, a header line, then its frames from the leaf outward. */
const script = (samples: string[][]) =>
  samples
    .map((frames) =>
      ['node 1 [000] 1.0: 1 cycles:', ...frames.map((f) => `\t    7f00 ${f}+0x1c (/tmp/perf-1.map)`)].join('\n'),
    )
    .join('\n\n');
const route = 'JS:*route file:///w/apps/server/src/routes/auth.ts:1:20';
const parse = 'JS:*parse file:///w/node_modules/valibot/dist/index.js:1:5';
const pgCallback = 'JS:~query.callback /w/node_modules/pg/lib/client.js:733:24';
const floorRoute = 'JS:*(anonymous) file:///w/bench/floor-server.ts:9:3';

describe('microsPerRequest', () => {
  it("charges each key its share of the samples of the process's CPU per request", () => {
    const us = microsPerRequest(
      new Map([
        ['a', 3],
        ['b', 1],
      ]),
      4,
      40,
    );
    expect([...us]).toEqual([
      ['a', 30],
      ['b', 10],
    ]);
  });

  it('gives nothing where there are no samples', () => {
    expect(microsPerRequest(new Map([['a', 0]]), 0, 40).get('a')).toBe(0);
  });
});

describe('difference', () => {
  it("lists every key of either side, the server's largest extra first", () => {
    const d = difference(
      new Map([
        ['hono', 5],
        ['valibot', 8],
      ]),
      new Map([
        ['hono', 6],
        ['floor', 2],
      ]),
    );
    expect(d).toEqual([
      { key: 'valibot', server: 8, floor: 0, extra: 8 },
      { key: 'hono', server: 5, floor: 6, extra: -1 },
      { key: 'floor', server: 0, floor: 2, extra: -2 },
    ]);
  });
});

describe('compareToFloor', () => {
  it("sets the server's µs per request beside the floor's, by package and by the functions only the server ran", () => {
    const server = tally(script([[route], [parse], [parse], ['Builtins_LoadIC_Miss', route], [pgCallback]]));
    const floor = tally(script([[floorRoute], ['Builtins_X', route]]));
    const lines = compareToFloor({ tally: server, cpuPerRequest: 50 }, { tally: floor, cpuPerRequest: 10 });
    // Server: of 5 samples, 2 in valibot, 2 in apps/server, 1 in pg, of 50 µs; floor: 1 of 2 in bench, 1 in apps/server, of 10 µs.
    expect(lines).toContain('| valibot |    20.0 |     0.0 |    20.0 |');
    expect(lines).toContain('| apps/server |    20.0 |     5.0 |    15.0 |');
    expect(lines).toContain('| node-postgres |    10.0 |     0.0 |    10.0 |');
    expect(lines).toContain('| bench (the floor server) |     0.0 |     5.0 |    -5.0 |');
    expect(lines).toContain('| all |    50.0 |    10.0 |    40.0 |');
    const only = lines.slice(lines.findIndex((l) => l.startsWith("the server's functions")) + 1);
    expect(only).toEqual([
      '   20.0 µs  parse node_modules/valibot/dist/index.js:1:5',
      '   10.0 µs  query.callback node_modules/pg/lib/client.js:733:24',
    ]);
  });
});

describe('workPerRequest', () => {
  it("divides each counter's growth by the requests answered", () => {
    expect(workPerRequest({ walRecords: 100, blocks: 7 }, { walRecords: 700, blocks: 307 }, 100)).toEqual({
      walRecords: 6,
      blocks: 3,
    });
  });
  it('never divides by zero: a run that answered nothing shows the whole growth', () => {
    expect(workPerRequest({ walRecords: 1 }, { walRecords: 5 }, 0)).toEqual({ walRecords: 4 });
  });
});
