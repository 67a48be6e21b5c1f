import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnServer, type ServerProcess } from '@strongroom/tests/spawn';
import { afterAll, describe, expect, it } from 'vitest';
import { S3RVER_KEY, startTestS3 } from '@strongroom/adapters-node/testing';
import { unknownSettings } from '../../startup-checks.js';

/**
 * Start-up failures of a real server process: each is one line on stderr naming the setting, its
 * value and the cause, and nothing was written before it.
 */

const dirs: string[] = [];
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'sr-startup-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface Outcome {
  readonly listening: boolean;
  readonly code: number | null;
  readonly stderr: string;
  /** The structured lines it logged. */
  readonly events: ServerProcess['events'];
}

/** Runs main.ts with only `env`'s SVC_ settings until it listens (then stops it) or exits. */
async function run(env: Record<string, string>): Promise<Outcome> {
  const unset: Record<string, undefined> = { PG_URL: undefined };
  for (const k of Object.keys(process.env))
    if (k.startsWith('SVC_') && !(k in env) && k !== 'SVC_BASE_URL') unset[k] = undefined;
  const s = await spawnServer({ env: { ...unset, ...env }, startTimeoutMs: 60_000 });
  if (!s.ok) return { listening: false, code: s.code, stderr: s.stderr, events: [] };
  // Whatever it logged after listening (the unknown-setting warnings) is written by the time it has
  // exited: a graceful stop flushes the log.
  await s.server.stop();
  return { listening: true, code: (await s.server.exited).code, stderr: s.server.stderr(), events: s.server.events };
}

describe('start-up failures name the setting, the value and the cause', { timeout: 120_000 }, () => {
  it('a busy port: one line naming PORT, and the data directory left untouched', async () => {
    const busy: Server = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
    const port = (busy.address() as { port: number }).port;
    const dataDir = join(tempDir(), 'data');
    try {
      const o = await run({ PORT: String(port), SVC_DATA_DIR: dataDir });
      expect(o.listening).toBe(false);
      expect(o.code).toBe(1);
      expect(o.stderr.trim().split('\n')).toHaveLength(1);
      expect(o.stderr).toContain(`PORT=${port}`);
      expect(o.stderr).toContain('already in use');
      // Nothing written: no secret key, no database, not even the directory.
      expect(existsSync(dataDir)).toBe(false);
    } finally {
      busy.close();
    }
  });

  it('a data directory that cannot be created or written: one line naming SVC_DATA_DIR and its path', async () => {
    const file = join(tempDir(), 'a-file');
    writeFileSync(file, 'not a directory');
    for (const dataDir of [file, join(file, 'below'), '/proc/strongroom-x']) {
      const o = await run({ SVC_DATA_DIR: dataDir });
      expect(o.listening, dataDir).toBe(false);
      expect(o.code, dataDir).toBe(1);
      expect(o.stderr.trim().split('\n'), dataDir).toHaveLength(1);
      expect(o.stderr, dataDir).toContain(`SVC_DATA_DIR=${dataDir}`);
      expect(o.stderr, dataDir).toMatch(/E[A-Z]+/);
    }
  });

  it('an unreachable database: one line naming SVC_DATABASE_URL without its password', async () => {
    const o = await run({
      SVC_DATA_DIR: tempDir(),
      SVC_DATABASE_URL: 'postgres://strongroom:hunter2secret@127.0.0.1:1/strongroom',
    });
    expect(o.listening).toBe(false);
    expect(o.code).toBe(1);
    expect(o.stderr).toContain('SVC_DATABASE_URL=postgres://strongroom:***@127.0.0.1:1/strongroom');
    expect(o.stderr).not.toContain('hunter2secret');
  });

  it('object storage is probed at start (write, read back, delete): no credentials, a wrong key or an unknown bucket stop it in one line naming SVC_BLOB_URL', async () => {
    const s3 = await startTestS3('probe-bucket');
    try {
      // Only what these settings say: no credentials file, profile or instance metadata to find. The
      // SDK's own notice about Node 20 (a stderr line of its own at load) is not what this checks.
      const aws = {
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        AWS_EC2_METADATA_DISABLED: 'true',
        AWS_SHARED_CREDENTIALS_FILE: join(tempDir(), 'none'),
        AWS_CONFIG_FILE: join(tempDir(), 'none'),
        AWS_PROFILE: '',
        AWS_ACCESS_KEY_ID: '',
        AWS_SECRET_ACCESS_KEY: '',
      };
      const bucket = { SVC_S3_ENDPOINT: s3.endpoint, SVC_S3_FORCE_PATH_STYLE: 'true', SVC_S3_TIMEOUT_S: '5' };
      const key = { AWS_ACCESS_KEY_ID: S3RVER_KEY.accessKeyId, AWS_SECRET_ACCESS_KEY: S3RVER_KEY.secretAccessKey };
      for (const [env, cause] of [
        [{ ...aws, ...bucket, SVC_BLOB_URL: 's3://probe-bucket/sr' }, 'no AWS credentials found'],
        [
          { ...aws, ...bucket, ...key, AWS_SECRET_ACCESS_KEY: 'wrong', SVC_BLOB_URL: 's3://probe-bucket/sr' },
          'writing a probe object failed',
        ],
        [{ ...aws, ...bucket, ...key, SVC_BLOB_URL: 's3://no-such-bucket/sr' }, 'NoSuchBucket'],
      ] as const) {
        const dataDir = join(tempDir(), 'data');
        const o = await run({ ...env, SVC_DATA_DIR: dataDir });
        expect(o.listening, cause).toBe(false);
        expect(o.code, cause).toBe(1);
        expect(o.stderr.trim().split('\n'), o.stderr).toHaveLength(1);
        expect(o.stderr).toContain(
          `configuration error: SVC_BLOB_URL=${env.SVC_BLOB_URL} (SVC_S3_ENDPOINT=${s3.endpoint})`,
        );
        expect(o.stderr).toContain(cause);
        expect(o.stderr).not.toContain(S3RVER_KEY.secretAccessKey);
        expect(existsSync(join(dataDir, 'strongroom.db')), cause).toBe(false);
      }
      const ok = await run({
        ...aws,
        ...bucket,
        ...key,
        SVC_BLOB_URL: 's3://probe-bucket/sr',
        SVC_DATA_DIR: join(tempDir(), 'data'),
      });
      expect(ok.listening, ok.stderr).toBe(true);
      // The probe leaves nothing behind.
      expect((await s3.keys('sr/')).filter((k) => k.includes('probe/'))).toEqual([]);
    } finally {
      await s3.stop();
    }
  });

  it('the start-up log names who may register; a mode that is not one stops the start naming SVC_REGISTRATION', async () => {
    const open = await run({ SVC_DATA_DIR: join(tempDir(), 'data') });
    expect(open.events.find((e) => e.event === 'server.listening')).toMatchObject({ registration: 'open' });
    const listed = await run({ SVC_DATA_DIR: join(tempDir(), 'data'), SVC_REGISTRATION: 'allowlist' });
    expect(listed.events.find((e) => e.event === 'server.listening')).toMatchObject({ registration: 'allowlist' });
    const bad = await run({ SVC_DATA_DIR: join(tempDir(), 'data'), SVC_REGISTRATION: 'invite-only' });
    expect(bad.listening).toBe(false);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toContain('SVC_REGISTRATION must be open, closed, allowlist, got "invite-only"');
  });

  it('a misspelt setting is warned about by name, with the closest known one', async () => {
    const dataDir = tempDir();
    const o = await run({ SVC_DATA_DIR: dataDir, SVC_QUOTA_HARD: '1000' });
    expect(o.listening).toBe(true);
    const warnings = o.events.filter((e) => e.event === 'config.unknown_setting');
    expect(warnings).toEqual([
      expect.objectContaining({ name: 'SVC_QUOTA_HARD', did_you_mean: 'SVC_QUOTA_HARD_BYTES' }),
    ]);
    expect(readdirSync(dataDir)).toContain('strongroom.db');
  });
});

describe('unknownSettings', () => {
  it('names only SVC_ variables never asked for, with a close guess or none', () => {
    const asked = new Set(['SVC_QUOTA_HARD_BYTES', 'SVC_DATA_DIR', 'SVC_BASE_URL']);
    expect(
      unknownSettings(['PATH', 'SVC_DATA_DIR', 'SVC_QUOTA_HARD', 'SVC_DATADIR', 'SVC_ZZZZZZZZZZZZZZZZZZZZZZZ'], asked),
    ).toEqual([
      { name: 'SVC_DATADIR', closest: 'SVC_DATA_DIR' },
      { name: 'SVC_QUOTA_HARD', closest: 'SVC_QUOTA_HARD_BYTES' },
      { name: 'SVC_ZZZZZZZZZZZZZZZZZZZZZZZ', closest: null },
    ]);
  });
});
