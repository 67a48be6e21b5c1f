import * as v from 'valibot';
import { readCohortHash } from '@strongroom/core';
import type { AppDeps } from '../deps.js';
import { route, type AnyRoute } from '../http/route-def.js';
import { json, unwrap } from '../http/respond.js';
import { Advisory, SignedIn } from './schemas.js';
import { tokenPairBody } from './auth.js';

const B64 = v.pipe(v.string(), v.description('unpadded base64url'));

/** Second-factor recovery through the master key (the identity anchor). */
export function secondFactorRoutes(deps: AppDeps): AnyRoute[] {
  return [
    route({
      method: 'POST',
      path: '/v1/auth/login/recover-totp',
      noStore: true,
      tag: 'auth',
      summary:
        'Answer a sign-in challenge with the identity key instead of a code: signs in and removes the second factor',
      auth: false,
      // The second step of a password sign-in: off with local sign-in, like verify-totp.
      localAuth: true,
      // Unlike verify-totp it changes how the account signs in (it removes the second factor), and
      // Spec §2.11 exempts only login, verify-totp, refresh and signing out: a write (426 below Min).
      body: {
        type: 'json',
        name: 'TotpRecoveryRequest',
        schema: v.strictObject({
          challenge: v.pipe(B64, v.description('the challenge of the 202 login answer')),
          signature: v.pipe(
            v.string(),
            v.description(
              'base64url Ed25519 signature by the identity anchor over canonical CBOR ["svc-totp-recovery/v1", account_id, challenge_bytes]; account_id is in the 202 login answer',
            ),
          ),
          cohort_hash: Advisory,
          device_id: Advisory,
        }),
      },
      responses: {
        200: { description: 'Signed in; the second factor is removed (enroll again to restore it)', schema: SignedIn },
      },
      errors: [
        'error.auth.proof_invalid',
        'error.auth.account_locked',
        'error.request.invalid',
        'error.auth.unavailable',
      ],
      handle: async ({ c, body }) => {
        const pair = unwrap(
          await deps.totpRecovery.recover({
            challenge: body.challenge,
            signature: body.signature,
            cohortHash: readCohortHash(body.cohort_hash),
          }),
        );
        return json(c, 200, tokenPairBody(pair));
      },
    }),
  ];
}
