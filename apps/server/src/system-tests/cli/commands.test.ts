import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../cli.js';
import { readConfig } from '../../config.js';
import { buildDeps, nodePlatform, openStores } from '../../deps.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A fresh data directory with the server's stores and services over it, as the CLI sees them. */
async function deployment() {
  const dir = mkdtempSync(join(tmpdir(), 'strongroom-cli-'));
  dirs.push(dir);
  const env = { SVC_DATA_DIR: dir };
  const config = readConfig(env);
  const stores = await openStores(config);
  const deps = await buildDeps(config, stores, { ...nodePlatform(), logger: { info() {}, warn() {}, error() {} } });
  return { env, stores, deps };
}

/** A deployment with one registered account (`address`) sponsoring one sponsored account (`id`). */
async function sponsoredDeployment(address: string) {
  const { env, stores, deps } = await deployment();
  const reg = await deps.accounts.register({ address, password: 'correct horse battery' });
  if (!reg.ok) throw new Error('register failed');
  const sponsor = (await stores.accounts.findAccountByAddress(address))!;
  const sponsored = await deps.sponsorship.create({ accountId: sponsor.id });
  if (!sponsored.ok) throw new Error('sponsor failed');
  return { env, stores, sponsor, id: sponsored.value.accountId };
}

describe('operator CLI', () => {
  it('rotates the signing key in the shared database and locks accounts', async () => {
    const { env, stores, deps } = await deployment();
    const reg = await deps.accounts.register({ address: 'ops@example.org', password: 'correct horse battery' });
    expect(reg.ok).toBe(true);
    const before = (await deps.keyRing.jwks()).keys.map((k) => k.kid);

    const rotated = await runCli(['rotate-key'], env);
    expect(rotated.code).toBe(0);
    await deps.keyRing.reload();
    const after = (await deps.keyRing.jwks()).keys.map((k) => k.kid);
    expect(after).toHaveLength(2);
    expect(after).toEqual(expect.arrayContaining(before));

    expect((await runCli(['lock', 'OPS@example.org'], env)).code).toBe(0);
    expect((await stores.accounts.findAccountByAddress('ops@example.org'))?.lockedAt).not.toBeNull();
    expect((await runCli(['unlock', 'ops@example.org'], env)).code).toBe(0);
    expect((await stores.accounts.findAccountByAddress('ops@example.org'))?.lockedAt).toBeNull();
    expect(await runCli(['lock', 'nobody@example.org'], env)).toMatchObject({
      code: 1,
      out: expect.stringContaining('no account'),
    });
    expect((await runCli(['frobnicate'], env)).code).toBe(2);
    await stores.close();
  });

  it('refuses what it would otherwise ignore or round: an extra argument, a limit past 2^53 - 1, `default` as the soft limit, a malformed key', async () => {
    const { env, stores, deps } = await deployment();
    await deps.accounts.register({ address: 'args@example.org', password: 'correct horse battery' });
    const keys = (await deps.keyRing.jwks()).keys.length;
    expect(await runCli(['rotate-key', 'extra'], env)).toMatchObject({
      code: 2,
      out: expect.stringContaining('unexpected argument "extra"'),
    });
    await deps.keyRing.reload();
    expect((await deps.keyRing.jwks()).keys).toHaveLength(keys);
    expect(await runCli(['quota-limits', 'args@example.org', '100', '200', 'extra'], env)).toMatchObject({ code: 2 });
    expect(await runCli(['quota-limits', 'args@example.org', '99999999999999999999', '-'], env)).toMatchObject({
      code: 1,
      out: expect.stringContaining('9007199254740991'),
    });
    expect(await runCli(['quota-limits', 'args@example.org', 'default', '1000'], env)).toMatchObject({ code: 1 });
    expect((await runCli(['quota-limits', 'args@example.org', 'default', 'default'], env)).code).toBe(0);
    expect((await runCli(['blobs', 'verify'], env)).code).toBe(0);
    expect(await runCli(['lock', 'args@example.org'], { ...env, SVC_SECRET_KEY: 'not a key' })).toMatchObject({
      code: 1,
      out: expect.stringMatching(/^configuration error: .*SVC_SECRET_KEY/),
    });
    // Revoking for a peer that is not configured is still done, and says so (a typo shows).
    expect(await runCli(['revoke-peer-capabilities', 'https://typo.example'], env)).toMatchObject({
      code: 0,
      out: expect.stringContaining('note: https://typo.example is not one of SVC_FEDERATION_PEERS'),
    });
    await stores.close();
  });

  it("quota-limits: `default` puts both limits back to the deployment's; mixed with a value it is refused in one line, nothing changed", async () => {
    const { env, stores, deps } = await deployment();
    await deps.accounts.register({ address: 'mix@example.org', password: 'correct horse battery' });
    const id = (await stores.accounts.findAccountByAddress('mix@example.org'))!.id;
    expect((await runCli(['quota-limits', 'mix@example.org', '100', '200'], env)).code).toBe(0);
    for (const [soft, hard] of [
      ['10', 'default'],
      ['-', 'default'],
      ['default', '10'],
      ['default', '-'],
    ]) {
      const r = await runCli(['quota-limits', 'mix@example.org', soft!, hard!], env);
      expect(r.code, `${soft} ${hard}`).toBe(1);
      expect(r.out.split('\n'), `${soft} ${hard}`).toHaveLength(1);
      expect(r.out).toMatch(/^error: .*default default/);
      expect((await stores.quota.readLedger(id, Date.now())).limits, `${soft} ${hard}`).toEqual({
        soft: 100,
        hard: 200,
      });
    }
    expect(await runCli(['quota-limits', 'mix@example.org', 'default', 'default'], env)).toMatchObject({ code: 0 });
    expect((await stores.quota.readLedger(id, Date.now())).limits).toBeNull();
    await stores.close();
  });

  it('a store that cannot be opened is one line naming what is wrong, exit 1, never a stack trace', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'strongroom-cli-'));
    dirs.push(dir);
    // The data directory is a file.
    const file = join(dir, 'not-a-dir');
    writeFileSync(file, 'x');
    const r1 = await runCli(['rotate-key'], {
      SVC_DATA_DIR: file,
      SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc',
    });
    expect(r1.code).toBe(1);
    expect(r1.out.split('\n')).toHaveLength(1);
    expect(r1.out).toMatch(/^(configuration )?error: /);
    // The database file is not a database.
    const garbage = join(dir, 'garbage');
    mkdirSync(garbage);
    writeFileSync(join(garbage, 'strongroom.db'), 'this is not a database, not even close to one');
    const r2 = await runCli(['rotate-key'], {
      SVC_DATA_DIR: garbage,
      SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc',
    });
    expect(r2.code).toBe(1);
    expect(r2.out.split('\n')).toHaveLength(1);
    expect(r2.out).toMatch(/^error: .*not a database/);
  });

  it('--help lists the commands and exits 0; an unknown command is named and exits 2', async () => {
    for (const help of [['--help'], ['-h'], ['help'], []]) {
      const r = await runCli(help, {});
      expect(r.code, help.join(' ')).toBe(0);
      expect(r.out).toContain('rotate-key');
    }
    const unknown = await runCli(['frobnicate'], {});
    expect(unknown.code).toBe(2);
    expect(unknown.out.split('\n')[0]).toBe('unknown command: frobnicate');
    // A name that is a property of every object is no command either.
    expect((await runCli(['toString'], {})).code).toBe(2);
  });

  it('reaches an account without an address by its id, and the ledger speaks snake_case', async () => {
    const { env, stores, id } = await sponsoredDeployment('sponsor@example.org');
    expect((await runCli(['lock', id.toUpperCase()], env)).code).toBe(0);
    expect((await stores.accounts.findAccountById(id))?.lockedAt).not.toBeNull();
    // An account as OpenID sign-in makes it when the provider gives no verified email: no address, no password.
    const oidcOnly = '0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
    expect(
      await stores.accounts.createAccount({
        id: oidcOnly,
        address: null,
        addressKey: null,
        passwordHash: null,
        displayName: null,
        createdAt: 1,
        lockedAt: null,
        credentialsChangedAt: null,
      }),
    ).toBe('created');
    expect(await runCli(['lock', oidcOnly], env)).toEqual({ code: 0, out: `locked ${oidcOnly}; closed 0 sessions` });
    expect((await stores.accounts.findAccountById(oidcOnly))?.lockedAt).not.toBeNull();
    expect((await runCli(['unlock', oidcOnly], env)).code).toBe(0);
    expect((await stores.accounts.findAccountById(oidcOnly))?.lockedAt).toBeNull();
    const ledger = await runCli(['ledger', 'sponsor@example.org'], env);
    expect(ledger.code).toBe(0);
    const keys = Object.keys(JSON.parse(ledger.out) as object);
    expect(keys.filter((k) => k !== k.toLowerCase())).toEqual([]);
    expect(keys).toEqual(expect.arrayContaining(['soft_limit', 'hard_limit', 'grace_expires_at', 'sponsor_id']));
    await stores.close();
  });

  it('sponsor never makes a chain: a payee cannot sponsor, a sponsor cannot become a payee; one line, exit 1, nothing changed', async () => {
    const { env, stores, sponsor: kidSponsor, id: kid } = await sponsoredDeployment('kids@example.org');
    const deps = await buildDeps(readConfig(env), stores, {
      ...nodePlatform(),
      logger: { info() {}, warn() {}, error() {} },
    });
    for (const a of ['payer@example.org', 'payee@example.org', 'third@example.org'])
      await deps.accounts.register({ address: a, password: 'correct horse battery' });
    const idOf = async (a: string) => (await stores.accounts.findAccountByAddress(a))!.id;
    const [payer, payee, third] = [
      await idOf('payer@example.org'),
      await idOf('payee@example.org'),
      await idOf('third@example.org'),
    ];
    expect(await runCli(['sponsor', 'payee@example.org', 'payer@example.org'], env)).toEqual({
      code: 0,
      out: `${payee} is sponsored by ${payer}`,
    });
    const sponsorOf = async (id: string) => (await stores.quota.readLedger(id, Date.now())).sponsorId;
    const refused = async (who: string, by: string, because: RegExp) => {
      const before = await Promise.all([payer, payee, third, kidSponsor.id, kid].map(sponsorOf));
      const r = await runCli(['sponsor', who, by], env);
      expect(r, `${who} ${by}`).toMatchObject({ code: 1, out: expect.stringMatching(because) });
      expect(r.out.split('\n')).toHaveLength(1);
      expect(await Promise.all([payer, payee, third, kidSponsor.id, kid].map(sponsorOf))).toEqual(before);
    };
    // The sponsor would be a payee (put there by the operator, or created as a sponsored account).
    await refused('third@example.org', 'payee@example.org', /^error: .*cannot sponsor/);
    await refused('third@example.org', kid, /^error: .*cannot sponsor/);
    // The payee-to-be already pays for others (an operator's payee, or a sponsored account it created).
    await refused(
      'payer@example.org',
      'third@example.org',
      /^error: An account that sponsors others \(1\) cannot be sponsored/,
    );
    await refused(
      'kids@example.org',
      'third@example.org',
      /^error: An account that sponsors others \(1\) cannot be sponsored/,
    );
    await refused('third@example.org', 'third@example.org', /^error: .*cannot sponsor itself/);
    // A sponsored account created over HTTP is paid for by its creator, who stays its sponsor (and owner).
    await refused(kid, 'third@example.org', /^error: A sponsored account is paid for by the account that created it/);
    await refused(kid, '-', /^error: A sponsored account is paid for by the account that created it/);
    expect(await runCli(['sponsor', kid, 'kids@example.org'], env)).toEqual({
      code: 0,
      out: `${kid} is sponsored by ${kidSponsor.id}`,
    });
    // Ending a sponsorship frees both sides.
    expect((await runCli(['sponsor', 'payee@example.org', '-'], env)).code).toBe(0);
    expect(await runCli(['sponsor', 'payer@example.org', 'third@example.org'], env)).toEqual({
      code: 0,
      out: `${payer} is sponsored by ${third}`,
    });
    await stores.close();
  });

  it("refuses to set limits on, or suspend, a sponsored account: its sponsor's quota is the one that decides", async () => {
    const { env, stores, sponsor, id } = await sponsoredDeployment('payer@example.org');
    for (const command of [
      ['suspend', id],
      ['quota-limits', id, '1', '2'],
    ]) {
      const r = await runCli(command, env);
      expect(r, command.join(' ')).toEqual({
        code: 1,
        out: `error: A sponsored account has no quota of its own: its sponsor's (${sponsor.id}) applies; set that one.`,
      });
    }
    const record = await stores.quota.readLedger(id, Date.now());
    expect(record).toMatchObject({ suspendedAt: null, limits: null });
    // The sponsor's own levers work as before.
    expect((await runCli(['suspend', 'payer@example.org'], env)).code).toBe(0);
    await stores.close();
  });
});
