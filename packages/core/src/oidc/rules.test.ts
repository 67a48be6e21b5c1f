import { describe, expect, it } from 'vitest';
import { sha256, toBase64url, utf8 } from '../encoding/bytes.js';
import type { VerifiedIdentity } from '../ports/identity-provider.js';
import type { LoginCodeRecord } from '../ports/oidc-flow-store.js';
import {
  appVerifierMatches,
  checkReturnTo,
  decideOidcCompletion,
  decideLink,
  decideReauthentication,
  decideSignIn,
  decideUnlink,
  initialDisplayName,
  initiatorFor,
  isLive,
  nonceForState,
  REAUTH_FRESH_MS,
  verifiedAddress,
} from './rules.js';

const ALLOWED = ['https://app.example/done', 'com.example.photos:/oauth'];
const VERIFIER = 'v'.repeat(43);
const CHALLENGE = toBase64url(sha256(utf8(VERIFIER)));
const person = (over: Partial<VerifiedIdentity> = {}): VerifiedIdentity => ({
  issuer: 'https://idp.example',
  subject: 's1',
  email: 'Ann@Example.org',
  emailVerified: true,
  name: 'Ann',
  authTime: 1_000,
  ...over,
});
const link = (accountId: string) => ({ issuer: 'https://idp.example', subject: 's1', accountId, createdAt: 0 });
const code = (over: Partial<LoginCodeRecord> = {}): LoginCodeRecord => ({
  codeHash: 'h',
  purpose: 'sign_in',
  accountId: 'acct-1',
  appChallenge: null,
  issuer: null,
  subject: null,
  authenticatedAt: 0,
  createdAt: 0,
  expiresAt: 60_000,
  ...over,
});

describe('return URIs', () => {
  it('accepts only exact members of the list', () => {
    // Every return URI needs the app's challenge, https included (login CSRF).
    expect(checkReturnTo('https://app.example/done', ALLOWED, null)).toMatchObject({
      code: 'error.oidc.app_challenge_required',
    });
    expect(checkReturnTo('https://app.example/done/', ALLOWED, CHALLENGE)).toMatchObject({
      code: 'error.oidc.return_to_invalid',
    });
    expect(checkReturnTo('https://APP.example/done', ALLOWED, CHALLENGE)).toMatchObject({
      code: 'error.oidc.return_to_invalid',
    });
    expect(checkReturnTo('https://evil.example/', ALLOWED, CHALLENGE)).toMatchObject({
      code: 'error.oidc.return_to_invalid',
    });
  });
  it('asks an app scheme for a PKCE challenge and checks its shape', () => {
    expect(checkReturnTo('com.example.photos:/oauth', ALLOWED, null)).toMatchObject({
      code: 'error.oidc.app_challenge_required',
    });
    expect(checkReturnTo('com.example.photos:/oauth', ALLOWED, CHALLENGE).ok).toBe(true);
    expect(checkReturnTo('com.example.photos:/oauth', ALLOWED, 'short')).toMatchObject({
      code: 'error.request.invalid',
    });
    expect(checkReturnTo('https://app.example/done', ALLOWED, CHALLENGE).ok).toBe(true);
  });
});

describe('purposes', () => {
  it('sign_in needs no caller; link and reauthenticate act on the caller', () => {
    expect(initiatorFor('sign_in', null)).toEqual({ ok: true, value: null });
    expect(initiatorFor('sign_in', { accountId: 'a' })).toEqual({ ok: true, value: null });
    expect(initiatorFor('link', null)).toMatchObject({ code: 'error.auth.session_invalid' });
    expect(initiatorFor('reauthenticate', { accountId: 'a' })).toEqual({ ok: true, value: 'a' });
  });
  it('a sponsored account has no identity of its own: an owner acting as one links nothing and proves nothing for it', () => {
    for (const purpose of ['link', 'reauthenticate'] as const) {
      expect(initiatorFor(purpose, { accountId: 's', actingOwnerId: 'a' })).toMatchObject({
        ok: false,
        code: 'error.sponsored.no_identity',
      });
    }
    expect(initiatorFor('sign_in', { accountId: 's', actingOwnerId: 'a' })).toEqual({ ok: true, value: null });
  });
});

describe('lifetimes and secrets', () => {
  it('a record is live strictly before its expiry', () => {
    expect(isLive({ expiresAt: 10 }, 9)).toBe(true);
    expect(isLive({ expiresAt: 10 }, 10)).toBe(false);
  });
  it('derives a distinct nonce per state', () => {
    expect(nonceForState('a')).not.toBe(nonceForState('b'));
    expect(nonceForState('a')).toBe(nonceForState('a'));
    expect(nonceForState('a')).not.toContain('a'.repeat(2));
  });
  it("checks the app's verifier against its challenge", () => {
    expect(appVerifierMatches(null, null)).toBe(true);
    expect(appVerifierMatches(CHALLENGE, VERIFIER)).toBe(true);
    expect(appVerifierMatches(CHALLENGE, null)).toBe(false);
    expect(appVerifierMatches(CHALLENGE, 'w'.repeat(43))).toBe(false);
    expect(appVerifierMatches(toBase64url(sha256(utf8('x'))), 'x')).toBe(false); // too short to be a verifier
  });
});

describe('accounts from identities', () => {
  it('a linked identity signs in to its account', () => {
    expect(decideSignIn({ link: link('acct-9'), identity: person(), addressHolder: 'other' })).toEqual({
      ok: true,
      value: { kind: 'existing', accountId: 'acct-9' },
    });
  });
  it('a new identity creates an account with its verified email and name', () => {
    expect(decideSignIn({ link: null, identity: person(), addressHolder: null })).toEqual({
      ok: true,
      value: {
        kind: 'create',
        address: { address: 'Ann@Example.org', key: 'ann@example.org', legacyKey: 'ann@example.org' },
        displayName: 'Ann',
      },
    });
  });
  it('an unverified, absent or malformed email gives no address', () => {
    expect(verifiedAddress(person({ emailVerified: false }))).toBeNull();
    expect(verifiedAddress(person({ email: null }))).toBeNull();
    expect(verifiedAddress(person({ email: 'not an address' }))).toBeNull();
  });
  it('never binds silently to the holder of a verified email', () => {
    expect(decideSignIn({ link: null, identity: person(), addressHolder: 'acct-2' })).toMatchObject({
      ok: false,
      code: 'error.auth.user_already_exists',
    });
  });
  it('keeps a display name only when the profile rules accept it', () => {
    expect(initialDisplayName(person({ name: '  Ann  ' }))).toBe('Ann');
    expect(initialDisplayName(person({ name: 'A\u0007' }))).toBeNull();
    expect(initialDisplayName(person({ name: 'x'.repeat(129) }))).toBeNull();
    expect(initialDisplayName(person({ name: null }))).toBeNull();
  });
});

describe('link, reauthenticate, unlink', () => {
  it('links a free identity or the initiator own, never another account', () => {
    expect(decideLink(null, 'a').ok).toBe(true);
    expect(decideLink(link('a'), 'a').ok).toBe(true);
    expect(decideLink(link('b'), 'a')).toMatchObject({ code: 'error.oidc.already_linked' });
  });
  it('a reauthentication is fresh for five minutes, for the initiator own identity only', () => {
    const now = 1_000_000;
    expect(decideReauthentication(link('a'), 'a', now - REAUTH_FRESH_MS, now)).toEqual({
      ok: true,
      value: now - REAUTH_FRESH_MS,
    });
    expect(decideReauthentication(link('a'), 'a', now - REAUTH_FRESH_MS - 1, now)).toMatchObject({
      code: 'error.oidc.reauthentication_stale',
    });
    expect(decideReauthentication(link('a'), 'a', null, now)).toMatchObject({
      code: 'error.oidc.reauthentication_stale',
    });
    expect(decideReauthentication(link('b'), 'a', now, now)).toMatchObject({ code: 'error.auth.not_the_initiator' });
    expect(decideReauthentication(null, 'a', now, now)).toMatchObject({ code: 'error.auth.not_the_initiator' });
    // A provider clock up to 60 s ahead is tolerated; further ahead proves nothing.
    expect(decideReauthentication(link('a'), 'a', now + 60_000, now).ok).toBe(true);
    expect(decideReauthentication(link('a'), 'a', now + 60_001, now)).toMatchObject({
      code: 'error.oidc.reauthentication_stale',
    });
  });
  it('unlink keeps at least one way in', () => {
    expect(decideUnlink({ hasLocalPassword: true, localSignIn: true, links: 1 }).ok).toBe(true);
    expect(decideUnlink({ hasLocalPassword: false, localSignIn: true, links: 1 })).toMatchObject({
      code: 'error.auth.last_sign_in_method',
    });
    // A password that cannot be used (local sign-in off) is no way in.
    expect(decideUnlink({ hasLocalPassword: true, localSignIn: false, links: 1 })).toMatchObject({
      code: 'error.auth.last_sign_in_method',
    });
    expect(decideUnlink({ hasLocalPassword: true, localSignIn: true, links: 0 })).toMatchObject({
      code: 'error.not_found',
    });
  });
});

describe('completion', () => {
  it('refuses a missing or expired code', () => {
    expect(decideOidcCompletion(null, 0, null, null)).toMatchObject({ code: 'error.auth.login_code_invalid' });
    expect(decideOidcCompletion(code(), 60_000, null, null)).toMatchObject({ code: 'error.auth.login_code_invalid' });
    expect(decideOidcCompletion(code(), 59_999, null, null).ok).toBe(true);
  });
  it("needs the app's verifier when the flow had a challenge", () => {
    expect(decideOidcCompletion(code({ appChallenge: CHALLENGE }), 0, null, null)).toMatchObject({
      code: 'error.auth.login_code_invalid',
    });
    expect(decideOidcCompletion(code({ appChallenge: CHALLENGE }), 0, null, VERIFIER).ok).toBe(true);
  });
  it('link and reauthenticate need the initiator', () => {
    for (const purpose of ['link', 'reauthenticate'] as const) {
      expect(decideOidcCompletion(code({ purpose }), 0, null, null)).toMatchObject({
        code: 'error.auth.session_invalid',
      });
      expect(decideOidcCompletion(code({ purpose }), 0, { accountId: 'acct-2' }, null)).toMatchObject({
        code: 'error.auth.not_the_initiator',
      });
      expect(decideOidcCompletion(code({ purpose }), 0, { accountId: 'acct-1' }, null).ok).toBe(true);
      // The owner who started it, acting as a sponsored account: not a caller with an identity.
      expect(
        decideOidcCompletion(code({ purpose }), 0, { accountId: 'sponsored', actingOwnerId: 'acct-1' }, null),
      ).toMatchObject({ code: 'error.sponsored.no_identity' });
    }
    expect(decideOidcCompletion(code(), 0, { accountId: 'sponsored', actingOwnerId: 'acct-1' }, null).ok).toBe(true);
  });
});

describe('what each refusal says', () => {
  const refused = (code: string, detail: string) => ({ ok: false, code, detail });
  it('names the rule a flow, a login code, a link or an unlink broke', () => {
    const now = 1_000_000;
    const cases: [unknown, ReturnType<typeof refused>][] = [
      [
        checkReturnTo('https://evil.example/', ALLOWED, CHALLENGE),
        refused('error.oidc.return_to_invalid', 'return_to is not one of the configured return URIs.'),
      ],
      [
        checkReturnTo('https://app.example/done', ALLOWED, null),
        refused(
          'error.oidc.app_challenge_required',
          'Every flow needs an app_challenge (PKCE S256 between the app and this server).',
        ),
      ],
      [
        checkReturnTo('https://app.example/done', ALLOWED, 'short'),
        refused('error.request.invalid', 'app_challenge must be the base64url SHA-256 of a verifier (43 characters).'),
      ],
      [
        initiatorFor('link', null),
        refused('error.auth.session_invalid', 'purpose link needs the access token of a signed-in account.'),
      ],
      [
        decideSignIn({ link: null, identity: person(), addressHolder: 'other' }),
        refused(
          'error.auth.user_already_exists',
          'An account holds this email; sign in to it and link the provider from there.',
        ),
      ],
      [
        decideLink(link('b'), 'a'),
        refused('error.oidc.already_linked', 'This provider identity belongs to another account.'),
      ],
      [
        decideReauthentication(link('b'), 'a', now, now),
        refused(
          'error.auth.not_the_initiator',
          'This provider identity is not linked to the account that started the flow.',
        ),
      ],
      [
        decideReauthentication(link('a'), 'a', null, now),
        refused('error.oidc.reauthentication_stale', 'The provider did not authenticate the person again.'),
      ],
      [
        decideOidcCompletion(null, 0, null, null),
        refused('error.auth.login_code_invalid', 'The login code is unknown, used or expired.'),
      ],
      [
        decideOidcCompletion(code({ appChallenge: CHALLENGE }), 0, null, null),
        refused('error.auth.login_code_invalid', 'The app_verifier does not match the flow.'),
      ],
      [
        decideOidcCompletion(code({ purpose: 'link' }), 0, null, null),
        refused(
          'error.auth.session_invalid',
          'This login code needs the access token of the account that started the flow.',
        ),
      ],
      [
        decideOidcCompletion(code({ purpose: 'link' }), 0, { accountId: 'acct-2' }, null),
        refused('error.auth.not_the_initiator', 'Another account started this flow.'),
      ],
      [
        decideUnlink({ hasLocalPassword: true, localSignIn: true, links: 0 }),
        refused('error.not_found', 'This account has no identity at the provider.'),
      ],
      [
        decideUnlink({ hasLocalPassword: false, localSignIn: true, links: 1 }),
        refused('error.auth.last_sign_in_method', 'The provider is the only usable way into this account.'),
      ],
    ];
    for (const [answer, expected] of cases) expect(answer).toEqual(expected);
  });
});
