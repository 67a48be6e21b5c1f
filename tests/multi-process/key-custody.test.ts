import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { ed25519 } from '@noble/curves/ed25519.js';
import { decodeJwt, decodeProtectedHeader, importJWK, SignJWT } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { makeHistoryEntry, toBase64url, uuidv7 } from '@strongroom/core';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { createSqlitePorts, openSqliteDatabase } from '@strongroom/adapters-sqlite';
import { createScratchDatabase, pgUrlFromEnv, type ScratchDatabase } from '@strongroom/adapters-pg/testing';
import { createPgPorts, openPgDatabase } from '@strongroom/adapters-pg';
import { runCli } from '@strongroom/server/cli';
import { FAULT_SECRET_KEY, startServerProcess, type ServerProcess } from '../harness/spawn.js';
import { fetchCall, PASSWORD } from '../harness/http.js';

/**
 * Key custody, tried as an attacker with a copy of the database would: every private key at rest
 * is sealed under SVC_SECRET_KEY (decisions: "Isolation, secrets and durability"), the files are
 * the server user's alone, a database from an earlier build is sealed forward at start, and an
 * attestation rotation made by another process is signed with at once.
 */

const ISSUER = 'http://127.0.0.1:8080';
const PG_URL = pgUrlFromEnv();
const dirs: string[] = [];
const scratch: ScratchDatabase[] = [];
afterAll(async () => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  for (const s of scratch) await s.drop().catch(() => undefined);
});
const dataDir = (): string => {
  const d = join(mkdtempSync(join(tmpdir(), 'sr-keys-')), 'data');
  dirs.push(d);
  return d;
};
/** The real server, given time to start on a machine shared with other test runs. */
const start = (o: Parameters<typeof startServerProcess>[0]) => startServerProcess({ startTimeoutMs: 120_000, ...o });
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

interface Victim {
  token: string;
  accountId: string;
  sessionId: string;
  /** The bearer secrets the victim holds: none may appear in a copy of the database. */
  sessionToken: string;
  signInTicket: string;
}

async function victim(url: string): Promise<Victim> {
  const address = `victim-${randomBytes(4).toString('hex')}@example.org`;
  const r = await fetchCall(url, 'POST', '/v1/auth/register', { body: { address, password: PASSWORD } });
  expect(r.status).toBe(200);
  const claims = decodeJwt(r.body.access_token as string);
  const token = r.body.access_token as string;
  const accountId = claims.sub!;
  const dir = new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]);
  expect(
    (
      await fetchCall(url, 'PUT', '/v1/devices/directory', {
        token,
        raw: dir as unknown as BodyInit,
        contentType: 'application/cbor',
      })
    ).status,
  ).toBeLessThan(300);
  return {
    token,
    accountId,
    sessionId: claims['sid'] as string,
    sessionToken: r.body.session_token as string,
    signInTicket: r.body.sign_in_ticket as string,
  };
}

/** create + PUT + finalize; the receipt's kid. */
async function receiptKid(url: string, token: string): Promise<string> {
  const data = randomBytes(64);
  const o = await fetchCall(url, 'POST', '/upload', {
    token,
    body: { device_id: 'phone', kind: 'original', declared_size: data.length },
  });
  expect(o.status).toBe(201);
  expect(
    (
      await fetchCall(url, 'PUT', `/upload/${o.body.upload_id}`, {
        token,
        raw: data as unknown as BodyInit,
        contentType: 'application/octet-stream',
      })
    ).status,
  ).toBe(200);
  const f = await fetchCall(url, 'POST', `/upload/${o.body.upload_id}/finalize`, {
    token,
    body: { content_hash: sha(data) },
  });
  expect(f.status).toBe(200);
  return decodeProtectedHeader(f.body.receipt as string).kid!;
}

/** Every 32-byte window of every value, raw, as base64url and as hex, split wherever a format might join parts. */
function candidateSeeds(values: readonly unknown[]): Uint8Array[] {
  const seen = new Set<string>();
  const out: Uint8Array[] = [];
  const windows = (b: Uint8Array) => {
    for (let i = 0; i + 32 <= b.length; i++) {
      const w = b.subarray(i, i + 32);
      const hex = Buffer.from(w).toString('hex');
      if (!seen.has(hex)) {
        seen.add(hex);
        out.push(new Uint8Array(w));
      }
    }
  };
  for (const v of values) {
    if (v === null || v === undefined) continue;
    if (v instanceof Uint8Array) windows(v);
    const text = typeof v === 'object' && !(v instanceof Uint8Array) ? JSON.stringify(v) : String(v);
    windows(Buffer.from(text, 'utf8'));
    for (const part of text.split(/[^A-Za-z0-9_-]+/)) {
      if (part.length >= 43) windows(Buffer.from(part, 'base64url'));
      if (part.length >= 64 && /^[0-9a-fA-F]+$/.test(part))
        windows(Buffer.from(part.slice(0, part.length & ~1), 'hex'));
    }
  }
  return out;
}

/** Every table of a copied SQLite file, every row, every column. */
function dumpSqlite(file: string): { tables: Record<string, Record<string, unknown>[]> } {
  const db = new Database(file);
  try {
    const names = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[];
    return {
      tables: Object.fromEntries(
        names.map(({ name }) => [name, db.prepare(`SELECT * FROM "${name}"`).all() as Record<string, unknown>[]]),
      ),
    };
  } finally {
    db.close();
  }
}

/** Every table of every non-system schema of a PostgreSQL database. */
async function dumpPg(url: string): Promise<{ tables: Record<string, Record<string, unknown>[]> }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ s: string; t: string }>(
      "SELECT table_schema AS s, table_name AS t FROM information_schema.tables WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')",
    );
    const tables: Record<string, Record<string, unknown>[]> = {};
    for (const { s, t } of rows)
      tables[s === 'public' ? t : `${s}.${t}`] = (await client.query(`SELECT * FROM "${s}"."${t}"`)).rows;
    return { tables };
  } finally {
    await client.end();
  }
}

/**
 * The attack: every candidate seed in the dump against every published public key (access-token
 * keys and attestation keys), then forged access tokens for the victim's open session under each
 * signing key row, signed with whatever that row holds.
 */
/** Every candidate in the dump was tried, and none signed a token the server took or matched a key. */
interface Loot {
  matched: string[];
  accepted: number;
  tried: number;
  /** Values of the session and ticket tables that refreshed a session when sent as a session token. */
  refreshed: number;
  triedTokens: number;
  /** The victim's own bearer secrets found in the copy, as stored. */
  secretsInCopy: string[];
}

function expectNothingUsable(result: Loot): void {
  expect(result.tried).toBeGreaterThan(0);
  // Before keys were sealed: the forged token was accepted (200) and both raw seeds matched.
  expect(result.accepted).toBe(0);
  expect(result.matched).toEqual([]);
  // Session tokens and tickets are kept as their hashes: nothing in the copy refreshes a session.
  expect(result.triedTokens).toBeGreaterThan(0);
  expect(result.refreshed).toBe(0);
  expect(result.secretsInCopy).toEqual([]);
}

async function attack(
  url: string,
  dump: { tables: Record<string, Record<string, unknown>[]> },
  v: Victim,
): Promise<Loot> {
  const info = (await fetchCall(url, 'GET', '/.well-known/svc/server-info', { version: null })).body;
  const attest = (await fetchCall(url, 'GET', '/.well-known/svc/attestation-keys', { version: null })).body;
  const published = new Set<string>([
    ...info.signing_keys.keys.map((k: { x: string }) => k.x),
    ...attest.history.map((e: { jwk: { x: string } }) => e.jwk.x),
  ]);
  expect(published.size).toBeGreaterThanOrEqual(2);
  const all = Object.values(dump.tables).flatMap((rows) => rows.flatMap((r) => Object.values(r)));
  const matched = candidateSeeds(all)
    .map((seed) => toBase64url(ed25519.getPublicKey(seed)))
    .filter((x) => published.has(x));
  const signingRows = dump.tables['signing_keys'] ?? [];
  expect(signingRows.length).toBeGreaterThanOrEqual(1);
  let accepted = 0;
  let tried = 0;
  const now = Math.floor(Date.now() / 1000);
  for (const row of signingRows) {
    for (const seed of candidateSeeds(Object.values(row))) {
      const key = await importJWK(
        { kty: 'OKP', crv: 'Ed25519', x: toBase64url(ed25519.getPublicKey(seed)), d: toBase64url(seed) },
        'EdDSA',
      );
      const forged = await new SignJWT({ sub: v.accountId, sid: v.sessionId, jti: uuidv7(Date.now(), randomBytes(10)) })
        .setProtectedHeader({ alg: 'EdDSA', typ: 'JWT', kid: String(row['kid']) })
        .setIssuer(ISSUER)
        .setIssuedAt(now)
        .setExpirationTime(now + 600)
        .sign(key);
      tried++;
      if ((await fetchCall(url, 'GET', '/v1/auth/profile', { token: forged })).status === 200) accepted++;
    }
  }
  // Every value the session and ticket tables hold, sent as a session token.
  const bearerRows = [...(dump.tables['sessions'] ?? []), ...(dump.tables['sign_in_tickets'] ?? [])];
  const values = new Set(
    bearerRows.flatMap((r) => Object.values(r)).filter((x): x is string => typeof x === 'string' && x.length >= 16),
  );
  let refreshed = 0;
  for (const value of values)
    if ((await fetchCall(url, 'POST', '/v1/auth/refresh', { body: { session_token: value } })).status === 200)
      refreshed++;
  const everything = JSON.stringify(dump.tables);
  const secretsInCopy = [v.sessionToken, v.signInTicket].filter((secret) => everything.includes(secret));
  return { matched, accepted, tried, refreshed, triedTokens: values.size, secretsInCopy };
}

describe('a stolen database forges nothing', () => {
  it("SQLite: the files of a running server, copied, hold no usable private key; the files are the server user's alone", async () => {
    const dir = dataDir();
    const server = await start({ dataDir: dir });
    try {
      const v = await victim(server.url);
      await receiptKid(server.url, v.token);
      // The honest token works, so a refusal below is the forgery's.
      expect((await fetchCall(server.url, 'GET', '/v1/auth/profile', { token: v.token })).status).toBe(200);
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      for (const f of ['strongroom.db', 'strongroom.db-wal', 'strongroom.db-shm']) {
        expect(existsSync(join(dir, f)), f).toBe(true);
        expect((statSync(join(dir, f)).mode & 0o777).toString(8), f).toBe('600');
      }
      // The attacker copies the database files (WAL included) while the server runs.
      const loot = mkdtempSync(join(tmpdir(), 'sr-loot-'));
      dirs.push(loot);
      for (const f of ['strongroom.db', 'strongroom.db-wal', 'strongroom.db-shm'])
        copyFileSync(join(dir, f), join(loot, f));
      expectNothingUsable(await attack(server.url, dumpSqlite(join(loot, 'strongroom.db')), v));
    } finally {
      await server.stop();
    }
  }, 300_000);

  it.skipIf(PG_URL === null)(
    "PostgreSQL: every table of a running server's database holds no usable private key",
    async () => {
      const db = await createScratchDatabase(PG_URL!, 'keys');
      scratch.push(db);
      const server = await start({ dataDir: dataDir(), env: { SVC_DATABASE_URL: db.url } });
      try {
        const v = await victim(server.url);
        await receiptKid(server.url, v.token);
        expect((await fetchCall(server.url, 'GET', '/v1/auth/profile', { token: v.token })).status).toBe(200);
        expectNothingUsable(await attack(server.url, await dumpPg(db.url), v));
      } finally {
        await server.stop();
      }
    },
    300_000,
  );
});

/** What an earlier build left: raw keys in both tables, and (on SQLite) a world-readable file. */
async function writeEarlierBuild(ports: {
  accounts: { ensureSigningKey(k: unknown): Promise<unknown> };
  attestation: { appendAttestationKey(k: unknown, e: unknown, at: number): Promise<unknown> };
}) {
  const signingSeed = randomBytes(32);
  const signing = {
    kid: 'legacy-sign',
    privateKey: toBase64url(signingSeed),
    publicKey: toBase64url(ed25519.getPublicKey(signingSeed)),
    createdAt: Date.now(),
    retiredAt: null,
  };
  await ports.accounts.ensureSigningKey(signing);
  const attestSeed = randomBytes(32);
  const attest = {
    kid: 'legacy-attest',
    privateKey: toBase64url(attestSeed),
    publicKey: toBase64url(ed25519.getPublicKey(attestSeed)),
    createdAt: Date.now(),
    retiredAt: null,
  };
  await ports.attestation.appendAttestationKey(
    attest,
    makeHistoryEntry(
      null,
      { kid: attest.kid, publicKey: attest.publicKey, addedAt: Math.floor(Date.now() / 1000) },
      attestSeed,
    ),
    Date.now(),
  );
  return { signing, attest };
}

describe('a database from an earlier build is sealed forward at start', () => {
  it('SQLite: raw keys sealed in place, the same keys go on signing, the file narrowed to 0600; another SVC_SECRET_KEY is still refused', async () => {
    const dir = dataDir();
    const { mkdirSync } = await import('node:fs');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'strongroom.db');
    const db = openSqliteDatabase(file);
    const legacy = await writeEarlierBuild(createSqlitePorts(db));
    db.close();
    chmodSync(file, 0o644);
    // Two processes starting at once on the same files.
    const servers = await Promise.all([start({ dataDir: dir }), start({ dataDir: dir })]);
    try {
      expect((statSync(file).mode & 0o777).toString(8)).toBe('600');
      const dump = dumpSqlite(file);
      expect(dump.tables['signing_keys']!.map((r) => r['private_key'])).not.toContain(legacy.signing.privateKey);
      expect(dump.tables['attestation_keys']!.map((r) => r['private_key'])).not.toContain(legacy.attest.privateKey);
      expect(dump.tables['signing_keys']!.every((r) => String(r['private_key']).startsWith('v1.'))).toBe(true);
      for (const s of servers) {
        const v = await victim(s.url);
        expect(decodeProtectedHeader(v.token).kid).toBe('legacy-sign');
        expect(await receiptKid(s.url, v.token)).toBe('legacy-attest');
      }
      const refused = await start({ dataDir: dir, env: { SVC_SECRET_KEY: toBase64url(randomBytes(32)) } }).then(
        async (s) => {
          await s.stop();
          return null;
        },
        (e: Error) => e.message,
      );
      expect(refused).toMatch(/SVC_SECRET_KEY/);
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
    }
  }, 300_000);

  it.skipIf(PG_URL === null)(
    'PostgreSQL: two processes starting at once seal each raw key once and both serve',
    async () => {
      const scratchDb = await createScratchDatabase(PG_URL!, 'keys');
      scratch.push(scratchDb);
      const pgDb = await openPgDatabase(scratchDb.url);
      const legacy = await writeEarlierBuild(createPgPorts(pgDb.db));
      await pgDb.close();
      const env = { SVC_DATABASE_URL: scratchDb.url };
      const servers = await Promise.all([start({ dataDir: dataDir(), env }), start({ dataDir: dataDir(), env })]);
      try {
        const dump = await dumpPg(scratchDb.url);
        const sealed = dump.tables['signing_keys']!.map((r) => String(r['private_key']));
        expect(sealed).not.toContain(legacy.signing.privateKey);
        expect(sealed.every((p) => p.startsWith('v1.'))).toBe(true);
        expect(dump.tables['attestation_keys']!.map((r) => r['private_key'])).not.toContain(legacy.attest.privateKey);
        for (const s of servers) {
          const v = await victim(s.url);
          expect(decodeProtectedHeader(v.token).kid).toBe('legacy-sign');
          expect(await receiptKid(s.url, v.token)).toBe('legacy-attest');
        }
      } finally {
        await Promise.all(servers.map((s) => s.stop()));
      }
    },
    300_000,
  );
});

describe('an attestation rotation by another process', () => {
  const rotateThenFinalize = async (server: ServerProcess, env: Record<string, string>) => {
    const v = await victim(server.url);
    const before = await receiptKid(server.url, v.token);
    const out = await runCli(['rotate-attestation-key'], {
      ...process.env,
      SVC_SECRET_KEY: FAULT_SECRET_KEY,
      SVC_BASE_URL: ISSUER,
      ...env,
    });
    expect(out.code, out.out).toBe(0);
    const rotated = /new kid ([^,;\s]+)/.exec(out.out)![1]!;
    expect(rotated).not.toBe(before);
    // At once, not after some reload interval: the running server signs with the new key.
    expect(await receiptKid(server.url, v.token)).toBe(rotated);
    const record = (await fetchCall(server.url, 'GET', '/.well-known/svc/attestation-keys', { version: null })).body;
    expect(record.keys.map((k: { kid: string }) => k.kid)).toEqual([rotated]);
  };

  it("SQLite: the running server's next receipt is signed with the key the CLI rotated in", async () => {
    const dir = dataDir();
    const server = await start({ dataDir: dir });
    try {
      await rotateThenFinalize(server, { SVC_DATA_DIR: dir, SVC_DATABASE_URL: '' });
    } finally {
      await server.stop();
    }
  }, 300_000);

  it.skipIf(PG_URL === null)(
    'PostgreSQL: the same',
    async () => {
      const db = await createScratchDatabase(PG_URL!, 'keys');
      scratch.push(db);
      const dir = dataDir();
      const server = await start({ dataDir: dir, env: { SVC_DATABASE_URL: db.url } });
      try {
        await rotateThenFinalize(server, { SVC_DATA_DIR: dir, SVC_DATABASE_URL: db.url });
      } finally {
        await server.stop();
      }
    },
    300_000,
  );
});
