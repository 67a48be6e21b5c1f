import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { SponsoredRecord } from '../ports/sponsorship-store.js';
import {
  decideActAs,
  decideOwnIdentity,
  decideOwnerRemoval,
  decideSponsor,
  decideSponsorChange,
  decideSponsorCreation,
} from './rules.js';

const ids = fc.constantFrom('a', 'b', 'c', 'd', 'e');
const record = fc.record({ sponsorId: ids, extra: fc.uniqueArray(ids, { maxLength: 4 }) }).map(
  ({ sponsorId, extra }): SponsoredRecord => ({
    accountId: 'kid',
    sponsorId,
    createdAt: 0,
    owners: [sponsorId, ...extra.filter((o) => o !== sponsorId)],
  }),
);

describe('who may act as whom', () => {
  it('exactly the owners of a sponsored account may act as it; nobody may act as anything else', () => {
    fc.assert(
      fc.property(fc.option(record, { nil: null }), ids, (target, caller) => {
        const verdict = decideActAs(caller, target);
        expect(verdict.ok).toBe(target?.owners.includes(caller) ?? false);
        if (!verdict.ok) expect(verdict.code).toBe('error.auth.not_an_owner');
      }),
    );
  });

  it('a sponsored account, found or acted as, cannot sponsor', () => {
    expect(decideSponsor({}, null).ok).toBe(true);
    expect(decideSponsor({ actingOwnerId: 'a' }, null)).toMatchObject({
      ok: false,
      code: 'error.sponsored.cannot_sponsor',
    });
    expect(decideSponsor({}, { accountId: 'kid', sponsorId: 'a', createdAt: 0, owners: ['a'] })).toMatchObject({
      ok: false,
      code: 'error.sponsored.cannot_sponsor',
    });
  });

  it('creating one: only a registered account that pays for itself may sponsor', () => {
    fc.assert(
      fc.property(fc.option(record, { nil: null }), fc.option(ids, { nil: null }), (found, ledgerSponsorId) => {
        const verdict = decideSponsorCreation({ record: found, ledgerSponsorId });
        expect(verdict.ok).toBe(found === null && ledgerSponsorId === null);
        if (!verdict.ok) expect(verdict.code).toBe('error.sponsored.cannot_sponsor');
      }),
    );
  });

  it('setting a payer keeps it one level: the payer pays for itself (as for creation), the payee pays for nobody, never itself; a sponsored account keeps its creator', () => {
    fc.assert(
      fc.property(
        ids,
        fc.option(
          fc.record({
            accountId: ids,
            record: fc.option(record, { nil: null }),
            ledgerSponsorId: fc.option(ids, { nil: null }),
          }),
          { nil: null },
        ),
        fc.nat(3),
        fc.option(record, { nil: null }),
        (accountId, sponsor, payees, own) => {
          const verdict = decideSponsorChange({ accountId, sponsor, payees, record: own });
          // A sponsored account keeps the payer that created it; otherwise the payer pays for itself and the payee for nobody.
          const keepsCreator = own === null || sponsor?.accountId === own.sponsorId;
          const admitted =
            keepsCreator &&
            (sponsor === null ||
              (sponsor.accountId !== accountId && decideSponsorCreation(sponsor).ok && payees === 0));
          expect(verdict.ok).toBe(admitted);
          if (!verdict.ok) expect(verdict.code).toBe('error.sponsored.cannot_sponsor');
        },
      ),
    );
    // Creating a sponsored account is the same rule for a new account, which pays for nobody.
    fc.assert(
      fc.property(fc.option(record, { nil: null }), fc.option(ids, { nil: null }), (found, ledgerSponsorId) => {
        const facts = { record: found, ledgerSponsorId };
        expect(
          decideSponsorChange({ accountId: 'new', sponsor: { accountId: 'a', ...facts }, payees: 0, record: null }).ok,
        ).toBe(decideSponsorCreation(facts).ok);
      }),
    );
  });

  it('owners remove owners, never the sponsor', () => {
    fc.assert(
      fc.property(record, ids, ids, (r, caller, target) => {
        const verdict = decideOwnerRemoval(caller, r, target);
        if (!r.owners.includes(caller)) expect(verdict).toMatchObject({ ok: false, code: 'error.auth.not_an_owner' });
        else if (target === r.sponsorId) expect(verdict).toMatchObject({ ok: false, code: 'error.conflict' });
        else if (!r.owners.includes(target)) expect(verdict).toMatchObject({ ok: false, code: 'error.not_found' });
        else expect(verdict.ok).toBe(true);
      }),
    );
    expect(decideOwnerRemoval('a', null, 'b')).toMatchObject({ ok: false, code: 'error.auth.not_an_owner' });
  });
});

describe('what each refusal says', () => {
  const kid = (sponsorId: string, owners = [sponsorId]): SponsoredRecord => ({
    accountId: 'kid',
    sponsorId,
    createdAt: 0,
    owners,
  });
  it('names the rule acting as, sponsoring, changing a payer or removing an owner broke', () => {
    const refused = (code: string, detail: string) => ({ ok: false, code, detail });
    const cases: [unknown, ReturnType<typeof refused>][] = [
      [
        decideActAs('b', kid('a')),
        refused('error.auth.not_an_owner', 'The caller is not an owner of this sponsored account.'),
      ],
      [
        decideOwnIdentity({ actingOwnerId: 'a' }),
        refused(
          'error.sponsored.no_identity',
          'A sponsored account has no identity of its own: no handle, public record, display name, device directory or way to sign in.',
        ),
      ],
      [
        decideSponsor({ actingOwnerId: 'a' }, null),
        refused('error.sponsored.cannot_sponsor', 'A sponsored account cannot sponsor or own another account.'),
      ],
      [
        decideSponsorCreation({ record: null, ledgerSponsorId: 'p' }),
        refused('error.sponsored.cannot_sponsor', 'An account sponsored by another cannot sponsor.'),
      ],
      [
        decideSponsorChange({ accountId: 'kid', sponsor: null, payees: 0, record: kid('a') }),
        refused(
          'error.sponsored.cannot_sponsor',
          'A sponsored account is paid for by the account that created it (a); that cannot be changed or ended.',
        ),
      ],
      [
        decideSponsorChange({
          accountId: 'x',
          sponsor: { accountId: 'x', record: null, ledgerSponsorId: null },
          payees: 0,
          record: null,
        }),
        refused('error.sponsored.cannot_sponsor', 'An account cannot sponsor itself.'),
      ],
      [
        decideSponsorChange({
          accountId: 'x',
          sponsor: { accountId: 'p', record: null, ledgerSponsorId: null },
          payees: 2,
          record: null,
        }),
        refused(
          'error.sponsored.cannot_sponsor',
          'An account that sponsors others (2) cannot be sponsored: they would pay through an account that does not pay.',
        ),
      ],
      [
        decideOwnerRemoval('b', kid('a', ['a', 'b']), 'a'),
        refused('error.conflict', 'The sponsor cannot be removed from the owners.'),
      ],
      [decideOwnerRemoval('b', kid('a', ['a', 'b']), 'c'), refused('error.not_found', 'That account is not an owner.')],
    ];
    for (const [answer, expected] of cases) expect(answer).toEqual(expected);
  });
});
