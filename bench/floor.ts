/**
 * The floor mode (`npm run bench -- --floor`): every scenario against the server and against the
 * least it can cost on this machine (floor-server.ts), in the same rounds, each round after a run
 * of the bare route. The refresh's floor is also measured without its durable write, its
 * signature or both, so the output shows what each of those costs; the uploads' floor also with the
 * device read and the limit decided on a locked read (what the specification and core's rule add to a
 * write), each beside the server's figure for the same traffic. It answers two questions: can a
 * ratio target be reached here at all (not above the floor's ratio), and how much of a request is
 * the server's own work (its ratio as a share of the floor's).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { backendCpu, backendDelta, cpuMicros, measure, median, startScript, VERSION, type Load } from './lib.js';
import { SCENARIOS } from './scenarios.js';
import { body as UPLOAD_BODY } from './uploads.js';
import { SYNC_ASSETS, SYNC_PAGE, syncFromCursor, syncFromScratch } from './sync.js';

export interface FloorFigures {
  lines: string[];
  json: Record<string, unknown>;
}

const TOKEN = 'floor-session-token-0123456789abcdefghijklmnop';

const GUARDED_ONE = 'upload floor with the device read and the locked decision, one account';
const GUARDED_MANY = 'upload floor with the device read and the locked decision, 1,000 accounts';
/**
 * The floor rows measured beside a scenario. A refresh's parts are floors of less than the whole
 * request, so no server figure is set against them; a guarded upload floor is the same request as
 * the scenario's, so the server's figure is set against it too.
 */
const PARTS: Record<string, { name: string; setAgainst: boolean }[]> = {
  'POST /v1/auth/refresh': [
    'refresh floor without the write and the signature',
    'refresh floor without the write',
    'refresh floor without the signature',
  ].map((name) => ({ name, setAgainst: false })),
  'POST /upload, one account, 50 concurrent clients': [{ name: GUARDED_ONE, setAgainst: true }],
  'POST /upload, 1,000 accounts, 50 concurrent clients': [{ name: GUARDED_MANY, setAgainst: true }],
};
/** A guarded floor's name → the scenario whose server figure it is set against. */
const SET_AGAINST: Record<string, string> = Object.fromEntries(
  Object.entries(PARTS).flatMap(([scenario, parts]) =>
    parts.filter((p) => p.setAgainst).map((p) => [p.name, scenario]),
  ),
);

/** The floor row a scenario's server figure is compared with: for uploads the guarded floor, the same request. */
export function floorOf(scenario: string): string {
  return Object.entries(SET_AGAINST).find(([, against]) => against === scenario)?.[0] ?? scenario;
}

/** The floor server, on SQLite in a directory of its own unless `env` names a PostgreSQL database. */
export function startFloor(port: number, env: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'strongroom-floor-'));
  // Unauthenticated, the profile answers 401: up, and nothing measured yet.
  return startScript(
    'bench/floor-server.ts',
    port,
    '/floor/profile',
    { FLOOR_DIR: dir, FLOOR_TOKEN: TOKEN, FLOOR_SYNC_ROWS: String(SYNC_ASSETS), ...env },
    () => rmSync(dir, { recursive: true, force: true }),
  );
}

/** The floor's load for each scenario, by the scenario's name (the same shape of traffic). */
export function floorLoads(url: string): Record<string, Load> {
  const bearer = (i: number) => ({ authorization: `Bearer floor-at-${i}`, 'x-svc-protocol': VERSION });
  const json = { 'content-type': 'application/json', 'x-svc-protocol': VERSION };
  const refresh = (parts: string): Load => ({
    url: `${url}/floor/${parts}`,
    method: 'POST',
    headers: json,
    body: JSON.stringify({ session_token: TOKEN }),
  });
  const get = { method: 'GET', path: '/floor/profile', headers: bearer(1) };
  const refreshRequest = {
    method: 'POST',
    path: '/floor/read-write-sign',
    headers: json,
    body: JSON.stringify({ session_token: TOKEN }),
  };
  const upload = (i: number, path = '/floor/upload') => ({
    method: 'POST',
    path,
    headers: { ...json, ...bearer(i) },
    body: UPLOAD_BODY,
  });
  return {
    'GET /v1/auth/profile (authenticated)': { url: `${url}/floor/profile`, headers: bearer(1) },
    'POST /v1/auth/refresh': refresh('read-write-sign'),
    'refresh floor without the write and the signature': refresh('read'),
    'refresh floor without the write': refresh('read-sign'),
    'refresh floor without the signature': refresh('read-write'),
    'POST /upload, one account, 50 concurrent clients': {
      url: `${url}/floor/upload`,
      method: 'POST',
      headers: { ...json, ...bearer(3) },
      body: UPLOAD_BODY,
      connections: 50,
    },
    'POST /upload, 1,000 accounts, 50 concurrent clients': {
      url: `${url}/floor/upload`,
      connections: 50,
      requests: Array.from({ length: 1000 }, (_, i) => upload(i)),
    },
    [GUARDED_ONE]: {
      url: `${url}/floor/upload-guarded`,
      method: 'POST',
      headers: { ...json, ...bearer(3) },
      body: UPLOAD_BODY,
      connections: 50,
    },
    [GUARDED_MANY]: {
      url: `${url}/floor/upload-guarded`,
      connections: 50,
      requests: Array.from({ length: 1000 }, (_, i) => upload(i, '/floor/upload-guarded')),
    },
    // One indexed range read of account 4's change log: the first page, and an empty one past its end.
    [syncFromScratch.name]: { url: `${url}/floor/sync?after=0&limit=${SYNC_PAGE}`, headers: bearer(4) },
    [syncFromCursor.name]: { url: `${url}/floor/sync?after=${SYNC_ASSETS}&limit=${SYNC_PAGE}`, headers: bearer(4) },
    'mixed: 90 % GET profile, 5 % refresh, 5 % upload': {
      url: `${url}/floor/profile`,
      connections: 20,
      requests: [
        ...Array.from({ length: 9 }, () => get),
        refreshRequest,
        ...Array.from({ length: 9 }, () => get),
        upload(2),
      ],
    },
  };
}

interface Measured {
  name: string;
  side: 'floor' | 'server';
  load: Load;
  pid: number;
  ratios: number[];
  rps: number[];
  cpu: number[];
  /** PostgreSQL backends' CPU per request (the floor and the server share one scratch database, never at once). */
  dbCpu: number[];
}

export async function runFloor(
  store: string,
  server: { url: string; pid: number },
  bareUrl: string,
  floorEnv: Record<string, string>,
  opts: { seconds: number; rounds: number; port?: number },
): Promise<FloorFigures> {
  const floor = await startFloor(opts.port ?? 18_102, floorEnv);
  // Every backend of the database, read around each run: only the side being measured is busy then.
  const db = floorEnv.FLOOR_PG_URL ? new pg.Client({ connectionString: floorEnv.FLOOR_PG_URL }) : null;
  await db?.connect();
  try {
    const loads = floorLoads(floor.url);
    const measured: Measured[] = [];
    const add = (name: string, side: Measured['side'], load: Load, pid: number) =>
      measured.push({ name, side, load, pid, ratios: [], rps: [], cpu: [], dbCpu: [] });
    for (const scenario of SCENARIOS) {
      add(scenario.name, 'floor', loads[scenario.name]!, floor.pid);
      add(scenario.name, 'server', (await scenario.setup(server.url)).load, server.pid);
      for (const part of PARTS[scenario.name] ?? []) add(part.name, 'floor', loads[part.name]!, floor.pid);
    }
    for (const m of measured) await measure({ ...m.load, seconds: 2 });
    for (let round = 0; round < opts.rounds; round++) {
      const bare = await measure({ url: `${bareUrl}/bare`, seconds: opts.seconds });
      for (const m of measured) {
        const before = cpuMicros(m.pid);
        const dbBefore = db ? await backendCpu(db) : null;
        const f = await measure({ ...m.load, seconds: opts.seconds });
        const after = cpuMicros(m.pid);
        const dbAfter = db ? await backendCpu(db) : null;
        if (dbBefore && dbAfter && f.ok > 0) m.dbCpu.push(backendDelta(dbBefore, dbAfter) / f.ok);
        if (f.non2xx > 0 || f.errors > 0)
          throw new Error(`${m.side} ${m.name}: ${f.non2xx} non-2xx, ${f.errors} errors`);
        m.ratios.push(f.rps / bare.rps);
        m.rps.push(f.rps);
        if (before !== null && after !== null && f.ok > 0) m.cpu.push((after - before) / f.ok);
      }
    }
    const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
    const row = (m: Measured) => ({
      rps: median(m.rps),
      ratio: median(m.ratios),
      spread: { min: Math.min(...m.ratios), max: Math.max(...m.ratios) },
      cpu: m.cpu.length > 0 ? median(m.cpu) : null,
      dbCpu: m.dbCpu.length > 0 ? median(m.dbCpu) : null,
    });
    const us = (x: number | null) => (x === null ? '–' : `${x.toFixed(1)} µs`);
    const cpuCell = (r: ReturnType<typeof row>) => (db ? `${us(r.cpu)} + ${us(r.dbCpu)}` : us(r.cpu));
    const cell = (r: ReturnType<typeof row>) =>
      `${pct(r.ratio)} (${pct(r.spread.min)}-${pct(r.spread.max)}) | ${cpuCell(r)}`;
    const names = [...new Set(measured.map((m) => m.name))];
    const table = names.map((name) => {
      const f = measured.find((m) => m.name === name && m.side === 'floor')!;
      const s = measured.find((m) => m.name === (SET_AGAINST[name] ?? name) && m.side === 'server');
      return { name, floor: row(f), server: s ? row(s) : null, setAgainst: SET_AGAINST[name] ?? null };
    });
    const lines = [
      `${store}: each scenario against the server and its floor (bench/floor-server.ts), ${opts.rounds} rounds of ${opts.seconds} s, each round after a bare-route run; ratio to bare (spread) and process CPU per request${db ? " (the process's + the database backends')" : ''}`,
      '',
      '| scenario | floor / bare | floor CPU | server / bare | server CPU | server as share of floor |',
      '|---|---:|---:|---:|---:|---:|',
      ...table.map(
        (t) =>
          `| ${t.name} | ${cell(t.floor)} | ${t.server && !t.setAgainst ? `${cell(t.server)} | ${pct(t.server.ratio / t.floor.ratio)}` : t.server ? `(above) | | ${pct(t.server.ratio / t.floor.ratio)}` : '– | – | –'} |`,
      ),
    ];
    return { lines, json: { store, rows: table } };
  } finally {
    await db?.end();
    await floor.stop();
  }
}
