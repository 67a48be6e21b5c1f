import { guard } from '../errors.js';
import type { AccountStore } from '../ports/account-store.js';
import type { IdentityLink, IdentityLinkStore } from '../ports/identity-link-store.js';
import type { TotpEnrollmentRecord, TotpStore } from '../ports/totp-store.js';
import type { Principal } from '../session/service.js';

/** Every way into an account, so its owner can see each one and remove what they did not add. */
export interface SignInMethods {
  /** A local password that can sign in now (one exists and local sign-in is on). */
  readonly password: boolean;
  /** A confirmed second factor (a pending enrollment is not one). */
  readonly totp: boolean;
  readonly oidc: readonly { readonly issuer: string; readonly subject: string; readonly linkedAt: number }[];
}

/** The pure reading of the stored facts. */
export function signInMethodsOf(input: {
  readonly passwordHash: string | null;
  readonly localSignIn: boolean;
  readonly totp: Pick<TotpEnrollmentRecord, 'state'> | null;
  readonly links: readonly IdentityLink[];
}): SignInMethods {
  return {
    password: input.passwordHash !== null && input.localSignIn,
    totp: input.totp?.state === 'confirmed',
    oidc: [...input.links]
      .sort((a, b) => a.createdAt - b.createdAt)
      .map((l) => ({ issuer: l.issuer, subject: l.subject, linkedAt: l.createdAt })),
  };
}

export interface SignInMethodsServiceDeps {
  readonly accounts: AccountStore;
  readonly totp: TotpStore;
  readonly links: IdentityLinkStore;
  readonly localSignIn: boolean;
}

/**
 * Lists the ways into the account the request acts as. A sponsored account (reached with act-as)
 * has none of its own: its owners sign in to their own accounts.
 */
export class SignInMethodsService {
  readonly #d: SignInMethodsServiceDeps;

  constructor(deps: SignInMethodsServiceDeps) {
    this.#d = deps;
  }

  async list(principal: Principal): Promise<SignInMethods> {
    const [account, totp, links] = await guard('error.store.unavailable', 'reading the sign-in methods', () =>
      Promise.all([
        this.#d.accounts.findAccountById(principal.accountId),
        this.#d.totp.findTotpEnrollment(principal.accountId),
        this.#d.links.listLinks(principal.accountId),
      ]),
    );
    return signInMethodsOf({
      passwordHash: account?.passwordHash ?? null,
      localSignIn: this.#d.localSignIn,
      totp,
      links,
    });
  }
}
