import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { codeForStep, secretKeyFingerprint, stepAt } from '@strongroom/core';
import { TestDevice, TestIdentity, totpSecretBytes } from '@strongroom/core/testing';
import { FsBlobStore, takeFileLock } from '@strongroom/adapters-node';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '@strongroom/server/cli';
import { Encrypter, generateX25519Identity, identityToRecipient } from 'age-encryption';
import { fetchCall, PASSWORD, type CallOptions, type Reply } from '../harness/http.js';
import { runCliProcess, startServerProcess, type ServerProcess } from '../harness/spawn.js';
import { MixedWorkload } from '../harness/fault/workload.js';

/**
 * The backup drill: a real server process under a mixed write load (sign-ins, TOTP enrolment and
 * sign-ins, uploads, revocations) is backed up with `npm run cli -- backup --recipient` in a process
 * of its own (its scheduled backups go to a passphrase); the copy is verified, restored with
 * --keep-sessions into a fresh data directory and started, and every write the server acknowledged
 * before the backup began must be there and work. Restored without it, every session is closed: one
 * revoked after the backup stays revoked, and everyone signs in again. Then the copy is damaged in
 * the ways an operator meets (a blob gone, a truncated database, another key) and `verify-backup`
 * and `restore` must refuse it naming the file; restore must refuse a non-empty directory without
 * touching it. The server key lives in the data dir here (SVC_SECRET_KEY unset), as on a small
 * self-hosted machine, so the backup carries it, encrypted.
 */

const SEED = Number(process.env.FAULT_SEED ?? Math.floor(Math.random() * 1e9));
const work = mkdtempSync(join(tmpdir(), 'sr-backup-drill-'));
const live = join(work, 'live');
const restored = join(work, 'restored');
const restoredKeep = join(work, 'restored-keep');
const backup = join(work, 'backup');
const scheduled = join(work, 'scheduled');
// The key comes from the data dir's secret.key (empty = unset).
const ENV = { SVC_SECRET_KEY: '', SVC_QUOTA_HARD_BYTES: '200000' };
// The operator's age identity (backups are encrypted to its recipient) and the schedule's passphrase.
const identityFile = join(work, 'backup-identity.txt');
const passphraseFile = join(work, 'backup-passphrase.txt');
const secretIdentity = await generateX25519Identity();
const identity = { recipient: await identityToRecipient(secretIdentity) };
writeFileSync(identityFile, `# an age identity file, as age-keygen writes it\n${secretIdentity}\n`, { mode: 0o600 });
writeFileSync(passphraseFile, 'drill passphrase: tiny wombat orbits the lemon\n', { mode: 0o600 });
const RECIPIENT = ['--recipient', identity.recipient];
const cliEnv = (dataDir: string, extra: Record<string, string> = {}) => ({
  ...process.env,
  ...ENV,
  SVC_BASE_URL: 'http://127.0.0.1:8080',
  SVC_DATA_DIR: dataDir,
  SVC_BACKUP_IDENTITY_FILE: identityFile,
  ...extra,
});
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** `npm run cli -- <args>` as an operator runs it: a process of its own. */
const cliProcess = (args: string[], env: NodeJS.ProcessEnv) => runCliProcess(args, env);

/** Every file under a directory with its bytes' hash: to show a directory was left untouched. */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const p = join(e.parentPath, e.name);
    out[p.slice(dir.length)] = e.isFile() ? sha(readFileSync(p)) : e.isDirectory() ? 'dir' : 'other';
  }
  return out;
}

/** The drill's own account signs in with its password and a TOTP code: a new session. */
async function signInOwn(url: string, own: Own): Promise<{ access_token: string; session_token: string }> {
  const login = await must(url, 'POST', '/v1/auth/login', { body: { address: own.address, password: PASSWORD } }, 202);
  // A step no earlier sign-in used (each code is single-use).
  own.step = Math.max(own.step + 1, stepAt(Date.now()) + 1);
  return (
    await must(
      url,
      'POST',
      '/v1/auth/login/verify-totp',
      { body: { challenge: login.body.challenge, code: codeForStep(own.totp, own.step) } },
      200,
    )
  ).body;
}

async function must(url: string, method: string, path: string, o: CallOptions, status: number): Promise<Reply> {
  const r = await fetchCall(url, method, path, o);
  if (r.status !== status)
    throw new Error(`${method} ${path}: expected ${status}, got ${r.status} ${JSON.stringify(r.body)}`);
  return r;
}

/** What the drill's own account did before the backup, to check by hand on the restored server. */
interface Own {
  address: string;
  totp: Uint8Array;
  /** The last TOTP step a sign-in used. */
  step: number;
  sessionToken: string;
  sessionId: string;
  revokedToken: string;
  blobs: { hash: string; bytes: Uint8Array }[];
  /** A share link covering the last blob's asset: its id is stored only hashed and sealed. */
  shareLinkId: string;
}

async function ownWrites(url: string): Promise<Own> {
  const address = `drill-${SEED}@example.org`;
  const reg = (await must(url, 'POST', '/v1/auth/register', { body: { address, password: PASSWORD } }, 200)).body;
  const token = reg.access_token as string;
  const accountId = (await must(url, 'GET', '/v1/auth/profile', { token }, 200)).body.account_id as string;
  await fetchCall(url, 'PUT', '/v1/devices/directory', {
    token,
    cbor: new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]),
  });
  const blobs: Own['blobs'] = [];
  let lastAsset = '';
  for (const size of [1, 4096, 70_000]) {
    const bytes = new Uint8Array(size).map((_, i) => (i * 31 + size) % 256);
    const up = (
      await must(
        url,
        'POST',
        '/upload',
        { token, body: { declared_size: size, kind: 'original', device_id: 'phone' } },
        201,
      )
    ).body;
    await must(
      url,
      'PUT',
      `/upload/${up.upload_id}`,
      { token, raw: bytes, contentType: 'application/octet-stream' },
      200,
    );
    await must(url, 'POST', `/upload/${up.upload_id}/finalize`, { token, body: { content_hash: sha(bytes) } }, 200);
    blobs.push({ hash: sha(bytes), bytes });
    lastAsset = up.upload_id as string;
  }
  const shareLinkId = (
    await must(
      url,
      'POST',
      '/v1/links',
      { token, body: { kind: 'share', asset_ids: [lastAsset], wrapped_key: 'a2V5' } },
      201,
    )
  ).body.link_id as string;
  const totp = totpSecretBytes((await must(url, 'POST', '/v1/auth/totp/enroll', { token }, 200)).body.secret);
  await must(
    url,
    'POST',
    '/v1/auth/totp/verify-enrollment',
    { token, body: { code: codeForStep(totp, stepAt(Date.now()) - 1) } },
    204,
  );
  // A second session, revoked: it must stay revoked in the copy.
  const login = (await must(url, 'POST', '/v1/auth/login', { body: { address, password: PASSWORD } }, 202)).body;
  const second = (
    await must(
      url,
      'POST',
      '/v1/auth/login/verify-totp',
      { body: { challenge: login.challenge, code: codeForStep(totp, stepAt(Date.now())) } },
      200,
    )
  ).body;
  await must(url, 'DELETE', `/v1/auth/sessions/${second.session_id}`, { token }, 204);
  return {
    address,
    totp,
    step: stepAt(Date.now()),
    sessionToken: reg.session_token,
    sessionId: reg.session_id,
    revokedToken: second.session_token,
    blobs,
    shareLinkId,
  };
}

describe('backup drill: back up under load, restore, start, everything acknowledged is there', {
  timeout: 180_000,
}, () => {
  let server: ServerProcess | undefined;
  let copy: ServerProcess | undefined;
  let keptCopy: ServerProcess | undefined;
  afterAll(async () => {
    await server?.kill();
    await copy?.kill();
    await keptCopy?.kill();
    rmSync(work, { recursive: true, force: true });
  });

  it(`restores every write acknowledged before the backup began (seed ${SEED})`, async () => {
    // The live server also runs the schedule: its first backup is due at once.
    server = await startServerProcess({
      dataDir: live,
      startTimeoutMs: 90_000,
      env: {
        ...ENV,
        SVC_BACKUP_DIR: scheduled,
        SVC_BACKUP_INTERVAL_S: '3600',
        SVC_BACKUP_KEEP: '2',
        SVC_BACKUP_PASSPHRASE_FILE: passphraseFile,
      },
    });
    const t0 = Date.now();
    const phase = (what: string) => console.info(`backup drill: ${what} at ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    // The schedule's first run finishes before the drill's own backup begins: both take the data
    // directory's backup lock, and a scheduled run that finds it held skips until its next look (a
    // minute away), which on a slow machine left the schedule with no backup at the end (CI).
    const scheduleDeadline = Date.now() + 60_000;
    while (
      !server.events.some((e) => e.event === 'backup.taken' || e.event === 'backup.failed') &&
      Date.now() < scheduleDeadline
    )
      await new Promise((r) => setTimeout(r, 100));
    phase('the schedule ran');
    // Every session stays in the model (none forgotten), so each one's fate is known.
    const load = new MixedWorkload({ seed: SEED, plainAccounts: 2, totpAccounts: 2, maxSessions: 1_000_000 });
    load.url = server.url;
    await load.setup();
    const own = await ownWrites(server.url);
    phase('set up');
    const abort = new AbortController();
    const running = load.run(abort.signal, 4);
    // Until every kind of write has been acknowledged at least once (at most 10 s).
    const until = Date.now() + 10_000;
    while (['upload', 'login', 'revoke', 'totp', 'refresh'].some((op) => !load.stats().byOp[op]) && Date.now() < until)
      await new Promise((r) => setTimeout(r, 100));
    const before = load.snapshot();
    const ackedBefore = load.stats().acknowledged;
    phase('load running');
    const taken = await cliProcess(['backup', ...RECIPIENT, backup], cliEnv(live));
    phase('backup taken');
    const ackedDuring = load.stats().acknowledged - ackedBefore;
    const after = load.snapshot();
    abort.abort();
    await running;
    expect(taken.code, taken.out).toBe(0);
    expect(taken.out).toMatch(/^backup written to /);
    expect(taken.out).toContain('MANIFEST.sha256.age');
    expect(taken.out).toContain('encryption: age, to 1 X25519 recipient(s)');
    expect(ackedDuring, 'the load kept writing while the backup ran').toBeGreaterThan(0);
    expect(load.stats().violations).toEqual([]);
    // The key travels with the backup only encrypted, with the database and the manifest; only
    // the owner can read any of it.
    expect(
      readdirSync(backup)
        .filter((n) => n !== 'blobs')
        .sort(),
    ).toEqual(['MANIFEST.sha256.age', 'backup.json', 'secret.key.age', 'strongroom.db.age']);
    expect(statSync(join(backup, 'secret.key.age')).mode & 0o077).toBe(0);
    expect(statSync(backup).mode & 0o077).toBe(0);
    // The owner revokes a session after the backup was taken: a restore must not bring it back.
    const access = (
      await must(server.url, 'POST', '/v1/auth/refresh', { body: { session_token: own.sessionToken } }, 200)
    ).body.access_token as string;
    await must(server.url, 'DELETE', `/v1/auth/sessions/${own.sessionId}`, { token: access }, 204);
    await must(server.url, 'POST', '/v1/auth/refresh', { body: { session_token: own.sessionToken } }, 401);

    const verified = await runCli(['verify-backup', backup], cliEnv(live));
    expect(verified, verified.out).toMatchObject({ code: 0 });
    // Every TOTP secret was opened with the copied key (the load's and the drill's own), every blob hashed.
    const [, sealed, blobCount] =
      /(\d+) sealed secrets open with secret\.key\.age, (\d+) blobs present/.exec(verified.out) ?? [];
    expect(Number(sealed)).toBeGreaterThanOrEqual(3);
    expect(Number(blobCount)).toBeGreaterThanOrEqual(3);

    // Restored as backed up (--keep-sessions): every acknowledged write is there and works.
    const kept = await runCli(['restore', '--keep-sessions', backup], cliEnv(restoredKeep));
    expect(kept.code, kept.out).toBe(0);
    expect(kept.out).toMatch(
      /^kept every session as of the backup \(.*\), --keep-sessions: sessions revoked after it are open again$/m,
    );
    // The copy of the database alone reaches no link: the share link's id is nowhere in it.
    expect(readFileSync(join(restoredKeep, 'strongroom.db')).includes(Buffer.from(own.shareLinkId))).toBe(false);
    phase('verified and restored');
    keptCopy = await startServerProcess({ dataDir: restoredKeep, startTimeoutMs: 90_000, env: ENV });
    phase('restored server started');
    before.url = keptCopy.url;
    const { problems, checks } = await before.verify({ settledBy: after });
    expect(problems, `seed ${SEED}`).toEqual([]);
    for (const k of ['sessions', 'revocations', 'uploads']) expect(checks[k] ?? 0, `${k} checked`).toBeGreaterThan(0);
    // Kept as backed up: the session revoked after the backup refreshes there again (what
    // --keep-sessions trades away), the one revoked before stays refused.
    await must(keptCopy.url, 'POST', '/v1/auth/refresh', { body: { session_token: own.sessionToken } }, 200);
    const revokedBefore = await fetchCall(keptCopy.url, 'POST', '/v1/auth/refresh', {
      body: { session_token: own.revokedToken },
    });
    expect([revokedBefore.status, revokedBefore.body?.code]).toEqual([401, 'error.auth.session_invalid']);
    await keptCopy.kill();
    keptCopy = undefined;

    // Restored by default: everything that was open at the backup is closed, and it says how much and when.
    const r = await runCli(['restore', backup], cliEnv(restored));
    expect(r.code, r.out).toBe(0);
    const takenAt = JSON.parse(readFileSync(join(backup, 'backup.json'), 'utf8')).created_at as string;
    const [, closedSessions] =
      new RegExp(
        `^closed what was open at the backup \\(${takenAt.replace(/\./g, '\\.')}\\): (\\d+) sessions, `,
        'm',
      ).exec(r.out) ?? [];
    expect(Number(closedSessions), r.out).toBeGreaterThanOrEqual(1);
    copy = await startServerProcess({ dataDir: restored, startTimeoutMs: 90_000, env: ENV });

    // The drill's own account: the session revoked after the backup stays revoked, as does every
    // other; password and a fresh TOTP code sign in, and every blob's bytes are there.
    for (const token of [own.sessionToken, own.revokedToken]) {
      const refused = await fetchCall(copy.url, 'POST', '/v1/auth/refresh', { body: { session_token: token } });
      expect([refused.status, refused.body?.code]).toEqual([401, 'error.auth.session_invalid']);
    }
    const signedIn = { body: await signInOwn(copy.url, own) };
    await must(copy.url, 'POST', '/v1/auth/refresh', { body: { session_token: signedIn.body.session_token } }, 200);
    // The share link, whose id the copy holds only hashed and sealed: it reads its blob, and its owner lists it by id.
    const last = own.blobs[2]!;
    await must(copy.url, 'GET', `/v1/links/${own.shareLinkId}`, {}, 200);
    await must(copy.url, 'GET', `/v1/links/${own.shareLinkId}/blobs/${last.hash}`, {}, 200);
    const listed = await must(copy.url, 'GET', '/v1/links', { token: signedIn.body.access_token }, 200);
    expect(listed.body.links.map((l: { link_id: string }) => l.link_id)).toEqual([own.shareLinkId]);
    // The bytes are read through the restored data dir's blob store.
    const store = new FsBlobStore(join(restored, 'blobs'));
    for (const b of own.blobs)
      expect(sha((await bytesOf(await store.read(b.hash))) ?? new Uint8Array()), `blob ${b.hash}`).toBe(b.hash);
    expect(Buffer.from((await bytesOf(await store.read(own.blobs[2]!.hash)))!)).toEqual(
      Buffer.from(own.blobs[2]!.bytes),
    );

    phase('checked');
    // The schedule took its backup, encrypted to the passphrase, and /metrics shows its age.
    const scheduledNames = readdirSync(scheduled).filter((n) => n.startsWith('strongroom-'));
    expect(scheduledNames.length).toBeGreaterThan(0);
    const scheduledOk = await runCli(
      ['verify-backup', '--passphrase-file', passphraseFile, join(scheduled, scheduledNames[0]!)],
      cliEnv(live, { SVC_BACKUP_IDENTITY_FILE: '' }),
    );
    expect(scheduledOk.out).toMatch(/^backup .* verified \(taken .*, encryption age-passphrase\)/);
    const backupEvents = JSON.stringify(server.events.filter((e) => String(e.event).startsWith('backup')));
    expect(
      server.events.some((e) => e.event === 'backup.taken'),
      backupEvents,
    ).toBe(true);
    const metrics = await fetch(`${server.url}/metrics`).then((res) => res.text());
    expect(metrics).toMatch(/^strongroom_backup_newest_age_seconds \d/m);
  });

  /** A damaged copy of the drill's backup. */
  async function damaged(name: string, harm: (dir: string) => Promise<void>): Promise<string> {
    const dir = join(work, `damaged-${name}`);
    cpSync(backup, dir, { recursive: true });
    await harm(dir);
    return dir;
  }

  /** Writes `text` age-encrypted to the backup's (public) recipient, as anyone who copied the folder could. */
  async function encryptedTo(path: string, text: string): Promise<void> {
    const e = new Encrypter();
    e.addRecipient(identity.recipient);
    writeFileSync(path, await e.encrypt(text), { mode: 0o600 });
  }

  const firstBlob = (dir: string) => {
    const shard = readdirSync(join(dir, 'blobs'))[0]!;
    return join(dir, 'blobs', shard, readdirSync(join(dir, 'blobs', shard))[0]!);
  };

  const cases: [string, (dir: string) => Promise<string>][] = [
    [
      'a missing blob',
      async (dir) => {
        const blob = firstBlob(dir);
        unlinkSync(blob);
        return `error: ${blob}: is listed in the manifest but missing`;
      },
    ],
    [
      'a truncated database',
      async (dir) => {
        const db = join(dir, 'strongroom.db.age');
        truncateSync(db, Math.floor(statSync(db).size / 2));
        return `error: ${db}: `;
      },
    ],
    [
      'another secret key (anyone can encrypt one to the public recipient)',
      async (dir) => {
        await encryptedTo(join(dir, 'secret.key.age'), 'AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE\n');
        return `error: ${join(dir, 'secret.key.age')}: is not the key this backup was taken with`;
      },
    ],
    [
      'a key the records were rewritten to name: the manifest MAC does not verify under it',
      async (dir) => {
        const other = new Uint8Array(32).fill(9);
        await encryptedTo(join(dir, 'secret.key.age'), `${Buffer.from(other).toString('base64url')}\n`);
        const info = JSON.parse(readFileSync(join(dir, 'backup.json'), 'utf8'));
        writeFileSync(
          join(dir, 'backup.json'),
          JSON.stringify({ ...info, key_fingerprint: secretKeyFingerprint(other) }),
        );
        return `error: ${join(dir, 'MANIFEST.sha256.age')}: MAC does not verify under the deployment's secret key`;
      },
    ],
    [
      'a blob replaced by a symbolic link',
      async (dir) => {
        const blob = firstBlob(dir);
        const elsewhere = join(work, 'elsewhere');
        cpSync(blob, elsewhere);
        unlinkSync(blob);
        symlinkSync(elsewhere, blob);
        return `error: ${blob}: is not a regular file`;
      },
    ],
    [
      'an unfinished backup (no manifest)',
      async (dir) => {
        unlinkSync(join(dir, 'MANIFEST.sha256.age'));
        return `error: ${join(dir, 'MANIFEST.sha256')}: missing: the backup did not finish`;
      },
    ],
    [
      'a changed backup.json',
      async (dir) => {
        const p = join(dir, 'backup.json');
        writeFileSync(p, readFileSync(p, 'utf8').replace('"blobs"', '"blobs_"'));
        return `error: ${p}: SHA-256 is `;
      },
    ],
  ];
  for (const [what, harm] of cases) {
    it(`verify-backup and restore refuse ${what}, naming the file, and restore writes nothing`, async () => {
      let expected = '';
      const dir = await damaged(what.replace(/\W+/g, '-').slice(0, 60), async (d) => void (expected = await harm(d)));
      const v = await runCli(['verify-backup', dir], cliEnv(live));
      expect(v.code).toBe(1);
      expect(v.out.split('\n')).toHaveLength(1);
      expect(v.out.startsWith(expected), `${v.out}\nexpected to start with ${expected}`).toBe(true);
      const target = join(work, `target-${what.replace(/\W+/g, '-').slice(0, 60)}`);
      const r = await runCli(['restore', dir], cliEnv(target));
      expect(r).toEqual({ code: 1, out: v.out });
      expect(existsSync(target), 'restore created nothing').toBe(false);
    });
  }

  it('restore refuses a non-empty data dir, naming it, and leaves it untouched', async () => {
    const target = join(work, 'occupied');
    mkdirSync(join(target, 'blobs'), { recursive: true });
    writeFileSync(join(target, 'strongroom.db'), "someone else's database");
    const was = tree(target);
    const r = await runCli(['restore', backup], cliEnv(target));
    expect(r).toEqual({
      code: 1,
      out: `error: ${target}: is not empty; restore only into an empty SVC_DATA_DIR (nothing was changed)`,
    });
    expect(tree(target)).toEqual(was);
    // A symbolic link to it is followed, and refused the same way.
    symlinkSync(target, join(work, 'occupied-link'));
    expect((await runCli(['restore', backup], cliEnv(join(work, 'occupied-link')))).out).toMatch(
      /occupied-link: is not empty/,
    );
    expect(tree(target)).toEqual(was);
    // A live data dir is not empty either.
    expect((await runCli(['restore', backup], cliEnv(live))).out).toBe(
      `error: ${live}: is not empty; restore only into an empty SVC_DATA_DIR (nothing was changed)`,
    );
  });

  it('backup refuses a target inside the data dir, or one that is not empty', async () => {
    const inside = await runCli(['backup', ...RECIPIENT, join(live, 'backups')], cliEnv(live));
    expect(inside.code).toBe(1);
    expect(inside.out).toMatch(/^error: .*backups: is inside SVC_DATA_DIR/);
    expect(existsSync(join(live, 'backups'))).toBe(false);
    // Nor through a symbolic link that leads into it.
    symlinkSync(live, join(work, 'sneaky'));
    const linked = await runCli(['backup', ...RECIPIENT, join(work, 'sneaky', 'b')], cliEnv(live));
    expect(linked.out).toBe(
      `error: ${join(work, 'sneaky', 'b')}: is inside SVC_DATA_DIR (${live}); a backup must live elsewhere, ideally on another disk`,
    );
    const full = await runCli(['backup', ...RECIPIENT, backup], cliEnv(live));
    expect(full.out).toBe(`error: ${backup}: is not empty; back up into a new or empty directory`);
  });

  it('a GC sweep and a backup never run at once: each refuses while the other holds the lock', async () => {
    const lock = await takeFileLock(join(live, 'maintenance.lock'), 'backup', Date.now());
    try {
      const sweep = await runCli(['gc-sweep'], cliEnv(live));
      expect(sweep.code).toBe(1);
      expect(sweep.out).toMatch(
        new RegExp(`^error: ${join(live, 'maintenance.lock')}: a backup is running \\(pid ${process.pid} `),
      );
      const other = await runCli(['backup', ...RECIPIENT, join(work, 'while-locked')], cliEnv(live));
      expect(other.out).toMatch(/maintenance\.lock: a backup is running/);
    } finally {
      await lock.release();
    }
    expect((await runCli(['gc-sweep'], cliEnv(live))).code).toBe(0);
  });
});

/** A blob store read, collected (these blobs are small). */
async function bytesOf(stream: AsyncIterable<Uint8Array> | null): Promise<Uint8Array | null> {
  if (stream === null) return null;
  const parts: Uint8Array[] = [];
  for await (const c of stream) parts.push(c);
  return new Uint8Array(Buffer.concat(parts));
}
