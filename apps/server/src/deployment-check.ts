import { judgeDeployment, secretKeyFingerprint, type DeploymentStore, type Logger } from '@strongroom/core';
import { ConfigError } from './config.js';

/**
 * Start-time check that this process belongs with the others on its database. The first process
 * to start records a keyed fingerprint of its server key (never the key) and its base URL; every
 * later start is judged against that record (core's `judgeDeployment`) and refuses to serve on a
 * mismatch, naming the variable:
 * - another SVC_SECRET_KEY could not open the TOTP secrets sealed under the recorded key (every
 *   second-factor sign-in would fail with 503);
 * - another SVC_BASE_URL (once one was configured) would mint access tokens with an `iss` the
 *   other processes refuse, and refuse theirs, so a client would be signed out whenever a load
 *   balancer switched process.
 *
 * `adoptIssuer` (the `adopt-base-url` operator command) records this process's base URL instead of
 * comparing it: the way to move a deployment to a new address. The key is always compared.
 */
export async function checkDeployment(
  store: DeploymentStore,
  mine: {
    secretKey: Uint8Array;
    issuer: string;
    issuerConfigured: boolean;
    now: number;
    keySource: string;
    adoptIssuer?: boolean;
    logger?: Logger;
  },
): Promise<void> {
  const keyFingerprint = secretKeyFingerprint(mine.secretKey);
  const own = { keyFingerprint, issuer: mine.issuer, issuerConfigured: mine.issuerConfigured };
  const recorded = await store.claimDeployment({ ...own, recordedAt: mine.now });
  let verdict = judgeDeployment(recorded, own);
  if (verdict === 'issuer' && mine.adoptIssuer) verdict = 'adopt_issuer';
  if (verdict === 'secret_key') {
    throw new ConfigError(
      `SVC_SECRET_KEY: this process's server key (${mine.keySource}) is not the one this database's secrets are sealed under ` +
        `(recorded ${new Date(recorded.recordedAt).toISOString()}). Every process over one database must use the same SVC_SECRET_KEY.`,
    );
  }
  if (verdict === 'issuer') {
    const yours = mine.issuerConfigured
      ? `SVC_BASE_URL is ${mine.issuer}`
      : `SVC_BASE_URL is unset (so ${mine.issuer})`;
    throw new ConfigError(
      `${yours}, but this database's access tokens are issued under ${recorded.issuer}. Every process over one database must ` +
        `share SVC_BASE_URL; to move the deployment, stop every process and run \`npm run cli -- adopt-base-url\` with the new SVC_BASE_URL.`,
    );
  }
  if (verdict === 'adopt_issuer') {
    await store.setDeploymentIssuer({
      issuer: mine.issuer,
      issuerConfigured: mine.issuerConfigured || (mine.adoptIssuer ?? false),
    });
    if (recorded.issuer !== mine.issuer)
      mine.logger?.warn('deployment.issuer_changed', { from: recorded.issuer, to: mine.issuer });
  }
}
