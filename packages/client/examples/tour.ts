/**
 * A tour of a Strongroom server through @strongroom/client alone: register, enroll and confirm a
 * TOTP factor, sign in again through the second-factor challenge, publish a signed device
 * directory, upload and finalize a file, read the quota, list the sessions, and revoke them all
 * with the identity key's proof.
 *
 *   STRONGROOM_URL=http://127.0.0.1:8080 node --import tsx packages/client/examples/tour.ts
 *
 * It prints one line per step and exits non-zero on the first failure.
 */
import {
  DeviceKeys,
  IdentityKey,
  SessionLostError,
  StrongroomClient,
  authenticatorCode,
  cohortHash,
} from '@strongroom/client';

const baseUrl = process.env.STRONGROOM_URL ?? process.argv[2] ?? 'http://127.0.0.1:8080';
const address = `tour-${Date.now().toString(36)}@example.org`;
const password = 'a long passphrase for the tour';

function step(name: string, detail: unknown = ''): void {
  process.stdout.write(
    `ok ${name}${detail === '' ? '' : ` ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`}\n`,
  );
}

async function main(): Promise<void> {
  // Persist the session wherever the platform keeps secrets; here it just stays in memory.
  const client = new StrongroomClient({ baseUrl });

  // 1. An account, signed in.
  await client.register(address, password);
  const accountId = client.accountId!;
  step('register', { account_id: accountId });

  // 2. A second factor: the secret goes to the authenticator app (as a QR code of `uri`).
  const { secret, uri } = await client.enrollTotp();
  await client.confirmTotp(authenticatorCode(secret));
  step('totp enrolled', uri.slice(0, uri.indexOf('?')));

  // 3. Sign in again: the password now yields a challenge, answered with the next code.
  const cohort = client.cohortHash('linux', 'tour-machine-id');
  if (cohort !== cohortHash({ userId: accountId, platform: 'linux', primaryId: 'tour-machine-id' }))
    throw new Error('cohort hash mismatch');
  const signIn = await client.signIn(address, password, { cohortHash: cohort });
  if (signIn.kind !== 'challenge') throw new Error('expected a second-factor challenge');
  await client.verifyTotp(signIn.challenge, authenticatorCode(secret, Date.now(), 1), { cohortHash: cohort });
  step('signed in through the challenge');

  // 4. The device directory, signed by the identity anchor; this device may write from a minute ago.
  const identity = IdentityKey.generate();
  const device = DeviceKeys.generate('tour-laptop');
  const published = await client.publishDirectory(
    identity.signDirectory(accountId, 1, [device.entry(Math.floor(Date.now() / 1000) - 60)]),
  );
  step('directory published', published);

  // 5. One (already encrypted) file, uploaded and finalized under its SHA-256.
  const bytes = new TextEncoder().encode(`ciphertext of a photo, ${new Date().toISOString()}`);
  const uploaded = await client.upload(bytes, { deviceId: device.deviceId });
  step('uploaded', { state: uploaded.state, content_hash: uploaded.contentHash });

  // 6. The quota, typed straight from the OpenAPI document.
  const quota = await client.api.GET('/quota');
  if (!quota.data) throw new Error(`quota: ${JSON.stringify(quota.error)}`);
  step('quota', { used: quota.data.used, state: quota.data.state });

  // 7. The sessions: the registration's and the second sign-in's.
  const sessions = await client.api.GET('/v1/auth/sessions');
  if (!sessions.data) throw new Error(`sessions: ${JSON.stringify(sessions.error)}`);
  step('sessions', { count: sessions.data.sessions.length });

  // 8. Revoke them all with the identity key (what a user does after losing a device).
  const before = client.session!;
  const closed = await client.revokeAll(identity);
  step('revoked all', { sessions_closed: closed });

  // The old session is gone for good: refreshing it is refused, and signing in is the way back.
  const stale = new StrongroomClient({ baseUrl, session: before });
  try {
    await stale.refresh();
    throw new Error('a revoked session still refreshed');
  } catch (err) {
    if (!(err instanceof SessionLostError)) throw err;
    step('old session refused', err.code);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`tour failed: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
