import * as v from 'valibot';
import { readCohortHash, TOTP_CODE_PATTERN } from '@strongroom/core';
import type { AppDeps } from '../deps.js';
import { HttpProblem } from '../http/problem.js';
import { route, type AnyRoute } from '../http/route-def.js';
import { json, noContent, unwrap } from '../http/respond.js';
import { tokenPairBody } from './auth.js';
import { Advisory, SignedIn } from './schemas.js';

/** Exactly six ASCII digits, as a JSON string: anything else is malformed (400) and costs no attempt. */
const Code = v.pipe(v.string(), v.regex(TOTP_CODE_PATTERN, 'must be a string of exactly six digits'));

/** The TOTP second factor: enrollment, confirmation, removal, and the challenged sign-in. */
export function totpRoutes(deps: AppDeps): AnyRoute[] {
  return [
    route({
      method: 'POST',
      path: '/v1/auth/totp/enroll',
      noStore: true,
      tag: 'totp',
      summary:
        'Issue a fresh TOTP secret (None or Pending -> Pending); shown once, never again. Needs a recent sign-in',
      auth: true,
      body: { type: 'empty' },
      responses: {
        200: {
          description:
            'The secret (base32) and an otpauth:// URI (SHA1, 6 digits, 30 s). Nothing is gated until verify-enrollment.',
          name: 'TotpSecret',
          schema: v.object({ secret: v.string(), uri: v.string() }),
        },
      },
      localAuth: true,
      errors: [
        'error.auth.totp_already_enrolled',
        'error.auth.no_local_password',
        'error.auth.reauthentication_required',
        'error.auth.unavailable',
        'error.sponsored.no_identity',
      ],
      handle: async ({ c, principal }) => {
        const enrolled = unwrap(await deps.totp.enroll(principal));
        return json(c, 200, { secret: enrolled.secret, uri: enrolled.uri });
      },
    }),
    route({
      method: 'POST',
      path: '/v1/auth/totp/verify-enrollment',
      tag: 'totp',
      summary: 'Confirm the pending factor with a current code (Pending -> Confirmed). Needs a recent sign-in',
      auth: true,
      body: { type: 'json', name: 'TotpCode', schema: v.strictObject({ code: Code }) },
      responses: { 204: { description: 'Confirmed; sign-in now asks for a code. The code is used up.' } },
      localAuth: true,
      errors: [
        'error.auth.invalid_code',
        'error.auth.totp_not_enrolled',
        'error.auth.totp_already_enrolled',
        'error.auth.reauthentication_required',
        'error.auth.throttled',
        'error.request.invalid',
        'error.auth.unavailable',
        'error.sponsored.no_identity',
      ],
      statusContext: 'managingFactor',
      handle: async ({ c, body, principal }) => {
        unwrap(await deps.totp.verifyEnrollment(principal, body.code));
        return noContent(c);
      },
    }),
    route({
      method: 'POST',
      path: '/v1/auth/totp/disable',
      tag: 'totp',
      summary: 'Remove the confirmed factor with a live code (Confirmed -> None). Needs a recent sign-in',
      auth: true,
      body: { type: 'json', name: 'TotpCode', schema: v.strictObject({ code: Code }) },
      responses: { 204: { description: 'Removed; sign-in no longer asks for a code' } },
      localAuth: true,
      errors: [
        'error.auth.invalid_code',
        'error.auth.totp_not_enrolled',
        'error.auth.reauthentication_required',
        'error.auth.throttled',
        'error.request.invalid',
        'error.auth.unavailable',
        'error.sponsored.no_identity',
      ],
      statusContext: 'managingFactor',
      handle: async ({ c, body, principal }) => {
        unwrap(await deps.totp.disable(principal, body.code));
        return noContent(c);
      },
    }),
    route({
      method: 'POST',
      path: '/v1/auth/login/verify-totp',
      noStore: true,
      tag: 'auth',
      summary: 'Answer a sign-in challenge with a code: opens the session and records the cohort',
      auth: false,
      // Signing in is not a write: a client below Min may still sign in to read.
      write: false,
      body: {
        type: 'json',
        name: 'TotpLoginRequest',
        schema: v.strictObject({ challenge: v.string(), code: Code, cohort_hash: Advisory, device_id: Advisory }),
      },
      responses: { 200: { description: 'Signed in', schema: SignedIn } },
      localAuth: true,
      errors: [
        'error.auth.invalid_code',
        'error.auth.challenge_invalid',
        'error.auth.challenge_exhausted',
        'error.auth.account_locked',
        'error.request.invalid',
        'error.auth.unavailable',
        'error.auth.throttled',
      ],
      handle: async ({ c, body }) => {
        const result = await deps.totp.verifyLogin({
          challenge: body.challenge,
          code: body.code,
          cohortHash: readCohortHash(body.cohort_hash),
        });
        // While the account is held by the wrong-code throttle no code is checked: 429 with Retry-After.
        if (!result.ok) throw HttpProblem.from(result);
        const pair = result.value;
        return json(c, 200, tokenPairBody(pair));
      },
    }),
  ];
}
