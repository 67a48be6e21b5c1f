import { fromBase64url, sha256, sha256Hex, toBase64url, utf8 } from '../encoding/bytes.js';
import { uuidv7 } from '../encoding/uuid.js';
import { CoreError, guard, ok, refuse, type ErrorCode, type Result } from '../errors.js';
import { findAccountByAddress } from '../profile/rules.js';
import type { AccountRecord, AccountStore } from '../ports/account-store.js';
import type { Clock } from '../ports/clock.js';
import type { IdentityLinkStore } from '../ports/identity-link-store.js';
import type { IdentityProvider, RedeemOutcome } from '../ports/identity-provider.js';
import type { Logger } from '../ports/logger.js';
import type { OidcFlowStore, OidcPurpose } from '../ports/oidc-flow-store.js';
import type { Random } from '../ports/random.js';
import type { SecretSealer } from '../secrets/secret-box.js';
import type { Principal, SessionService, TokenPair } from '../session/service.js';
import type { RegistrationGate } from '../registration/service.js';
import { outlivesCredentialChange } from '../account/credential-change.js';
import { negotiateProtocol, type ProtocolWindow } from '../versioning/protocol.js';
import {
  checkReturnTo,
  completionIsWrite,
  decideOidcCompletion,
  decideLink,
  decideReauthentication,
  decideSignIn,
  decideUnlink,
  FLOW_TTL_MS,
  initiatorFor,
  isLive,
  LOGIN_CODE_TTL_MS,
  nonceForState,
  verifiedAddress,
} from './rules.js';

export interface OidcServiceDeps {
  readonly provider: IdentityProvider;
  readonly flows: OidcFlowStore;
  readonly links: IdentityLinkStore;
  readonly accounts: AccountStore;
  readonly sessions: SessionService;
  readonly sealer: SecretSealer;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  /** The exact URIs a flow may send the client back to. */
  readonly returnUris: readonly string[];
  /** Whether local (password) sign-in is on: a password counts as a way in only then. */
  readonly localSignIn: boolean;
  /** The protocol window: link and reauthenticate completions are writes. */
  readonly window: ProtocolWindow;
  /** Who may create an account: a first sign-in that would create one asks as register does. */
  readonly registration: RegistrationGate;
}

export interface StartInput {
  readonly returnTo: string;
  readonly purpose: OidcPurpose;
  readonly appChallenge: string | null;
}

/** Where the callback sends the browser: back to the client with a login code or an error code. */
export type CallbackOutcome =
  | { readonly kind: 'state_invalid' }
  | { readonly kind: 'redirect'; readonly returnTo: string; readonly loginCode: string }
  | { readonly kind: 'redirect'; readonly returnTo: string; readonly error: ErrorCode };

export type Completion =
  | { readonly kind: 'session'; readonly pair: TokenPair }
  | { readonly kind: 'linked' }
  | { readonly kind: 'reauthenticated'; readonly at: number };

const STORE = 'error.store.unavailable';

/** The 32-byte secrets of a flow (state, login code) travel as base64url; anything else names nothing. */
function secretHash(text: string | undefined): string | null {
  if (text === undefined) return null;
  const bytes = fromBase64url(text);
  return bytes !== null && bytes.length === 32 ? sha256Hex(bytes) : null;
}

/**
 * OpenID Connect sign-in as a relying party: start, callback, complete and unlink. Everything a
 * second process needs to finish a flow lives in the flow store; the decisions live in rules.ts.
 */
export class OidcService {
  readonly #d: OidcServiceDeps;

  constructor(deps: OidcServiceDeps) {
    this.#d = deps;
  }

  get issuer(): string {
    return this.#d.provider.issuer;
  }

  /** Starts a flow and returns where to send the browser. The provider being unreachable throws `error.auth.unavailable`. */
  async start(
    input: StartInput,
    caller: Principal | null,
  ): Promise<
    Result<
      { authorizationUrl: string; expiresIn: number },
      | 'error.auth.session_invalid'
      | 'error.sponsored.no_identity'
      | 'error.oidc.return_to_invalid'
      | 'error.oidc.app_challenge_required'
      | 'error.request.invalid'
      | 'error.auth.reauthentication_required'
    >
  > {
    const initiator = initiatorFor(input.purpose, caller);
    if (!initiator.ok) return initiator;
    const target = checkReturnTo(input.returnTo, this.#d.returnUris, input.appChallenge);
    if (!target.ok) return target;
    // Refused up front so nobody is sent to the provider for nothing; complete checks it again.
    if (input.purpose === 'link') {
      const recent = await this.#d.sessions.requireRecentAuthentication(caller!, 'oidc_link');
      if (!recent.ok) return recent;
    }
    const state = this.#d.random.bytes(32);
    const stateText = toBase64url(state);
    const stateHash = sha256Hex(state);
    const verifier = toBase64url(this.#d.random.bytes(32));
    const authorizationUrl = await this.#d.provider.authorizationUrl({
      state: stateText,
      nonce: nonceForState(stateText),
      codeChallenge: toBase64url(sha256(utf8(verifier))),
      ...(input.purpose === 'reauthenticate' ? { maxAge: 0 } : {}),
    });
    const now = this.#d.clock.now();
    const sealedVerifier = await this.#d.sealer.seal(utf8(verifier), stateHash);
    await guard(STORE, 'storing an OpenID flow', () =>
      this.#d.flows.insertFlow(
        {
          stateHash,
          purpose: input.purpose,
          initiator: initiator.value,
          returnTo: input.returnTo,
          appChallenge: input.appChallenge,
          sealedVerifier,
          createdAt: now,
          expiresAt: now + FLOW_TTL_MS,
        },
        now,
      ),
    );
    return ok({ authorizationUrl, expiresIn: FLOW_TTL_MS / 1000 });
  }

  /**
   * The provider sent the browser back. The state is used up whatever happens next; the outcome is
   * a login code for the client or the code of what went wrong.
   */
  async callback(params: Readonly<Record<string, string>>): Promise<CallbackOutcome> {
    const stateHash = secretHash(params['state']);
    if (stateHash === null) return { kind: 'state_invalid' };
    const flow = await guard(STORE, 'taking an OpenID flow', () => this.#d.flows.takeFlow(stateHash));
    const now = this.#d.clock.now();
    if (flow === null || !isLive(flow, now)) return { kind: 'state_invalid' };
    // A flow the account started before its credentials changed was ended by the change.
    if (flow.initiator !== null) {
      const initiator = await guard(STORE, 'reading an account', () =>
        this.#d.accounts.findAccountById(flow.initiator!),
      );
      if (!outlivesCredentialChange(flow.createdAt, initiator)) return { kind: 'state_invalid' };
    }
    const back = (error: ErrorCode): CallbackOutcome => {
      this.#d.logger.info('oidc.callback_refused', { purpose: flow.purpose, code: error });
      return { kind: 'redirect', returnTo: flow.returnTo, error };
    };
    if (params['error'] !== undefined) return back('error.oidc.provider_denied');
    const verifier = await this.#d.sealer.open(flow.sealedVerifier, stateHash);
    if (verifier === null) return back('error.oidc.exchange_failed');
    let redeemed: RedeemOutcome;
    try {
      redeemed = await this.#d.provider.redeem({
        params,
        state: params['state']!,
        nonce: nonceForState(params['state']!),
        codeVerifier: new TextDecoder().decode(verifier),
      });
    } catch (cause) {
      if (cause instanceof CoreError && cause.code === 'error.auth.unavailable')
        return back('error.oidc.exchange_failed');
      throw cause;
    }
    if (!redeemed.ok)
      return back(redeemed.reason === 'exchange_failed' ? 'error.oidc.exchange_failed' : 'error.oidc.id_token_invalid');
    const identity = redeemed.identity;
    const link = await guard(STORE, 'reading an identity link', () =>
      this.#d.links.findLink(identity.issuer, identity.subject),
    );

    let accountId: string;
    let authenticatedAt = identity.authTime ?? now;
    if (flow.purpose === 'sign_in') {
      const address = link === null ? verifiedAddress(identity) : null;
      const holder =
        address === null
          ? null
          : await guard(STORE, 'reading an account', () => findAccountByAddress(this.#d.accounts, address));
      const decision = decideSignIn({ link, identity, addressHolder: holder?.id ?? null });
      if (!decision.ok) return back(decision.code);
      if (decision.value.kind === 'existing') {
        accountId = decision.value.accountId;
      } else {
        const admitted = await this.#d.registration.admit(decision.value.address);
        if (!admitted.ok) return back(admitted.code);
        const created = await this.#create(
          decision.value.address,
          decision.value.displayName,
          identity.issuer,
          identity.subject,
          now,
        );
        if (!created.ok) return back(created.code);
        accountId = created.value;
      }
    } else if (flow.purpose === 'link') {
      const decision = decideLink(link, flow.initiator!);
      if (!decision.ok) return back(decision.code);
      accountId = flow.initiator!;
    } else {
      const decision = decideReauthentication(link, flow.initiator!, identity.authTime, now);
      if (!decision.ok) return back(decision.code);
      accountId = flow.initiator!;
      authenticatedAt = decision.value;
    }

    const code = this.#d.random.bytes(32);
    await guard(STORE, 'storing a login code', () =>
      this.#d.flows.insertLoginCode({
        codeHash: sha256Hex(code),
        purpose: flow.purpose,
        accountId,
        appChallenge: flow.appChallenge,
        issuer: flow.purpose === 'link' ? identity.issuer : null,
        subject: flow.purpose === 'link' ? identity.subject : null,
        authenticatedAt,
        createdAt: now,
        expiresAt: now + LOGIN_CODE_TTL_MS,
      }),
    );
    this.#d.logger.info('oidc.callback_accepted', { purpose: flow.purpose });
    return { kind: 'redirect', returnTo: flow.returnTo, loginCode: toBase64url(code) };
  }

  /** First sign-in: the account and its link in one step; a concurrent first sign-in wins the race. */
  async #create(
    address: { address: string; key: string } | null,
    displayName: string | null,
    issuer: string,
    subject: string,
    now: number,
  ): Promise<Result<string, 'error.auth.user_already_exists'>> {
    const account: AccountRecord = {
      id: uuidv7(now, this.#d.random.bytes(10)),
      address: address?.address ?? null,
      addressKey: address?.key ?? null,
      passwordHash: null,
      displayName,
      createdAt: now,
      lockedAt: null,
      credentialsChangedAt: null,
    };
    const created = await guard(STORE, 'creating an account', () =>
      this.#d.links.createLinkedAccount(account, { issuer, subject, accountId: account.id, createdAt: now }),
    );
    if (created === 'created') return ok(account.id);
    if (created === 'address_taken') return refuse('error.auth.user_already_exists', 'An account holds this email.');
    const winner = await guard(STORE, 'reading an identity link', () => this.#d.links.findLink(issuer, subject));
    if (winner === null) throw new CoreError('error.internal', 'an identity link vanished during sign-in');
    return ok(winner.accountId);
  }

  /** Redeems a login code. Any attempt on a live code uses it up. */
  async complete(
    input: { loginCode: string; appVerifier: string | null; cohortHash: string | null; version: string },
    caller: Principal | null,
  ): Promise<
    Result<
      Completion,
      | 'error.auth.login_code_invalid'
      | 'error.auth.session_invalid'
      | 'error.auth.not_the_initiator'
      | 'error.sponsored.no_identity'
      | 'error.auth.account_locked'
      | 'error.oidc.already_linked'
      | 'error.auth.reauthentication_required'
      | 'error.protocol.below_min'
      | 'error.protocol.unsupported'
    >
  > {
    const hash = secretHash(input.loginCode);
    if (hash === null) return refuse('error.auth.login_code_invalid', 'The login code is unknown, used or expired.');
    const taken = await guard(STORE, 'taking a login code', () => this.#d.flows.takeLoginCode(hash));
    const decision = decideOidcCompletion(taken, this.#d.clock.now(), caller, input.appVerifier);
    if (!decision.ok) return decision;
    const code = decision.value;
    if (completionIsWrite(code.purpose)) {
      const negotiated = negotiateProtocol(input.version, this.#d.window, { write: true });
      if (!negotiated.ok) return negotiated;
    }
    const account = await guard(STORE, 'reading an account', () => this.#d.accounts.findAccountById(code.accountId));
    // Issued before a password change, revoke-all, recovery or lock of its account: ended by it.
    if (account === null || !outlivesCredentialChange(code.createdAt, account)) {
      return refuse('error.auth.login_code_invalid', 'The login code is unknown, used or expired.');
    }
    if (code.purpose === 'sign_in') {
      if (account.lockedAt !== null) return refuse('error.auth.account_locked', 'This account is locked.');
      const pair = await this.#d.sessions.open(account, { cohortHash: input.cohortHash, method: 'oidc' });
      // Its account's credentials changed while the code was redeemed: ended with them.
      if (pair === null) return refuse('error.auth.login_code_invalid', 'The login code is unknown, used or expired.');
      return ok({ kind: 'session', pair });
    }
    if (code.purpose === 'link') {
      const recent = await this.#d.sessions.requireRecentAuthentication(caller!, 'oidc_link');
      if (!recent.ok) return recent;
      const linked = await guard(STORE, 'linking an identity', () =>
        this.#d.links.insertLink({
          issuer: code.issuer!,
          subject: code.subject!,
          accountId: code.accountId,
          createdAt: this.#d.clock.now(),
        }),
      );
      if (linked === 'taken')
        return refuse('error.oidc.already_linked', 'This provider identity belongs to another account.');
      return ok({ kind: 'linked' });
    }
    const recorded = await this.#d.sessions.recordAuthentication(caller!, code.authenticatedAt);
    if (!recorded.ok) return recorded;
    return ok({ kind: 'reauthenticated', at: code.authenticatedAt });
  }

  /** Removes the caller's identity at this provider, unless it is the account's only way in. */
  async unlink(
    principal: Principal,
  ): Promise<
    Result<
      void,
      | 'error.auth.last_sign_in_method'
      | 'error.not_found'
      | 'error.auth.session_invalid'
      | 'error.auth.reauthentication_required'
    >
  > {
    const recent = await this.#d.sessions.requireRecentAuthentication(principal, 'oidc_unlink');
    if (!recent.ok) return recent;
    const account = await guard(STORE, 'reading an account', () =>
      this.#d.accounts.findAccountById(principal.accountId),
    );
    if (account === null) return refuse('error.auth.session_invalid', 'The account no longer exists.');
    const links = await guard(STORE, 'reading identity links', () => this.#d.links.listLinks(principal.accountId));
    const decision = decideUnlink({
      hasLocalPassword: account.passwordHash !== null,
      localSignIn: this.#d.localSignIn,
      links: links.filter((l) => l.issuer === this.issuer).length,
    });
    if (!decision.ok) return decision;
    await guard(STORE, 'removing identity links', () => this.#d.links.removeLinks(principal.accountId, this.issuer));
    return ok(undefined);
  }
}
