import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  blobsAgree,
  checkBlobStore,
  chooseBackupSealing,
  closeRestoredDeployment,
  type AccountOverview,
  describeBackupProblem,
  findAccountByAddress,
  NoDeploymentError,
  normalizeAddress,
  parseRfc3339Instant,
} from '@strongroom/core';
import { systemClock, takeFileLock } from '@strongroom/adapters-node';
import { ConfigError, readConfig, type Config } from './config.js';
import { buildDeps, nodePlatform, openStores, type AppDeps } from './deps.js';
import { BackupFailure, CLOSE_SESSIONS_MARKER, MAINTENANCE_LOCK, naming, PG_DUMP_FILE } from './backup/files.js';
import {
  checkRecipients,
  newIdentity,
  readIdentityFile,
  readPassphraseFile,
  type BackupOpener,
  type BackupSealing,
} from './backup/age.js';
import { restoreBackup } from './backup/restore.js';
import { openBlobStore } from './blob-store.js';
import { runScheduledBackup } from './backup/schedule.js';
import { takeBackup } from './backup/take.js';
import { parseKeyText, verifyBackup } from './backup/verify.js';
import { redactedUrl } from './startup-checks.js';

/** Operator commands. Each takes the same environment as the server and talks to its database. */
/** A command's output; `{ code, out }` when it ends with a finding rather than an error (exit status `code`). */
type Command = (deps: AppDeps, args: string[]) => Promise<string | { code: number; out: string }>;

/** Where the configuration points: the setting an operator would correct, never a password. */
const deploymentSetting = (config: Config): string =>
  config.databaseUrl === null
    ? `SVC_DATA_DIR=${config.dataDir}`
    : `SVC_DATABASE_URL=${redactedUrl(config.databaseUrl)}`;

/**
 * A command on an existing deployment found none where the configuration points (a mistyped
 * SVC_DATA_DIR, an empty database): one line naming the setting; nothing was created there.
 */
function noDeployment(config: Config, err: NoDeploymentError): string {
  const where = config.databaseUrl === null ? 'at' : 'in';
  return `error: no deployment ${where} ${deploymentSetting(config)} (${err.message}); nothing was created there. Check the setting; \`init\`, \`restore\` or the server's first start makes a deployment`;
}

async function accountIdOf(deps: AppDeps, who: string | undefined): Promise<string> {
  if (!who) throw new Error('name an account by address or id');
  // An id names any account, those without an address (OpenID, sponsored) included; only a UUID is
  // looked up as one (PostgreSQL refuses any other text for a uuid column).
  const looksLikeId = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(who.trim());
  const byId = looksLikeId ? await deps.stores.accounts.findAccountById(who.trim().toLowerCase()) : null;
  // An address is looked up by the same normalized key sign-in uses (core's normalizeAddress).
  const address = looksLikeId ? null : normalizeAddress(who);
  const account = byId ?? (address?.ok ? await findAccountByAddress(deps.stores.accounts, address.value) : null);
  if (!account) throw new Error(`no account ${who}`);
  return account.id;
}

/** An RFC 3339 instant with a zone (Z or an offset) that names a real calendar instant; anything else is refused, never guessed or rolled over. */
function parseInstant(text: string): number {
  const ms = parseRfc3339Instant(text);
  if (ms === null) {
    throw new Error(
      `effective_at must be an RFC 3339 instant on a real calendar date, such as 2027-03-01T00:00:00Z, got "${text}"`,
    );
  }
  return ms;
}

const iso = (ms: number): string => new Date(ms).toISOString();

function endedLine(ended: { sessionsClosed: number }): string {
  const n = ended.sessionsClosed;
  return `closed ${n} session${n === 1 ? '' : 's'}`;
}

/** Bytes for a person reading a table (exact figures are in --json). */
function bytes(n: number | null): string {
  if (n === null) return 'unlimited';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} B` : `${v.toFixed(1)} ${units[u]}`;
}

/** Columns padded to their widest cell, two spaces apart. */
function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [head, ...rows]
    .map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  '))
    .join('\n');
}

function accountsTable(rows: AccountOverview[]): string {
  if (rows.length === 0) return 'no accounts';
  const body = rows.map((a) => [
    a.id,
    a.address ?? (a.sponsor ? `(sponsored by ${a.sponsor.address ?? a.sponsor.id})` : '(no address)'),
    iso(a.createdAt).slice(0, 10),
    a.locked ? 'locked' : 'active',
    `${a.quota.state} ${bytes(a.quota.used)} (${bytes(a.quota.reserved)} reserved) of ${bytes(a.quota.hardLimit)}${a.quota.chargedTo === a.id ? '' : " (sponsor's)"}`,
    String(a.sessionsOpen),
    a.lastUsedAt === null ? '-' : iso(a.lastUsedAt),
    a.totp ? 'on' : 'off',
    a.openIdIssuers.length === 0 ? '-' : a.openIdIssuers.join(','),
  ]);
  return `${table(['ID', 'ADDRESS', 'CREATED', 'STATE', 'QUOTA', 'SESSIONS', 'LAST USED', 'TOTP', 'OPENID'], body)}\n${rows.length} account${rows.length === 1 ? '' : 's'}`;
}

/** One account for scripts: snake_case, exact bytes, RFC 3339 instants. */
function accountJson(a: AccountOverview): Record<string, unknown> {
  return {
    account_id: a.id,
    address: a.address,
    sponsor: a.sponsor === null ? null : { account_id: a.sponsor.id, address: a.sponsor.address },
    created_at: iso(a.createdAt),
    state: a.locked ? 'locked' : 'active',
    quota: {
      charged_to: a.quota.chargedTo,
      state: a.quota.state,
      used: a.quota.used,
      reserved: a.quota.reserved,
      soft_limit: a.quota.softLimit,
      hard_limit: a.quota.hardLimit,
    },
    sessions_open: a.sessionsOpen,
    last_used_at: a.lastUsedAt === null ? null : iso(a.lastUsedAt),
    totp: a.totp,
    openid_issuers: a.openIdIssuers,
  };
}

/**
 * `createsDeployment`: the command may make the deployment where there is none (directory, key,
 * database, schema, first keys). Every other command works on an existing one and refuses, naming
 * the setting, when there is none there.
 */
export const COMMANDS: Record<
  string,
  {
    usage: string;
    run: Command;
    adoptsBaseUrl?: boolean;
    createsDeployment?: boolean;
    closesRestoredSessions?: boolean;
  }
> = {
  init: {
    usage:
      "init                       create the deployment SVC_DATA_DIR (or SVC_DATABASE_URL) names, as the server's first start does; one already there is left as it is",
    createsDeployment: true,
    run: async (deps) =>
      `deployment ready at ${deploymentSetting(deps.config)}${deps.config.databaseUrl === null ? '' : ` (key and file blobs under SVC_DATA_DIR=${deps.config.dataDir})`}`,
  },
  'adopt-base-url': {
    usage:
      "adopt-base-url             record SVC_BASE_URL as the deployment's token issuer (after moving it; stop every process first)",
    adoptsBaseUrl: true,
    run: async (deps) =>
      `the database now records ${deps.config.baseUrl} as the token issuer; start every process with this SVC_BASE_URL`,
  },
  'rotate-key': {
    usage: 'rotate-key                 retire the signing key and start signing with a new one',
    run: async (deps) => {
      const next = await deps.keyRing.rotate();
      return `signing key rotated; new kid ${next.kid}; running servers sign with it within a minute, and the old key verifies for ${deps.config.keyGraceMs / 1000} s after that`;
    },
  },
  deprecate: {
    usage:
      'deprecate <version> <effective_at>   announce that from effective_at (RFC 3339) the Min becomes version (at least SVC_DEPRECATION_NOTICE_S away)',
    run: async (deps, [version, when]) => {
      if (!version || !when) throw new Error('usage: deprecate <version YYYY-MM-DD> <effective_at RFC 3339>');
      const effectiveAt = parseInstant(when);
      const r = await deps.deprecations.announce(version, effectiveAt);
      if (!r.ok) throw new Error(`${r.code}: ${r.detail ?? 'refused'}`);
      return `announced: from ${new Date(r.value.effectiveAt).toISOString()} the minimum protocol version is ${r.value.minProtocolVersion}`;
    },
  },
  'rotate-attestation-key': {
    usage: 'rotate-attestation-key     retire the storage-attestation key and append a new one to the history',
    run: async (deps) => {
      const entry = await deps.attestation.rotate();
      return `attestation key rotated; new kid ${entry.kid}, history entry ${entry.seq} (${entry.hash})`;
    },
  },
  'close-restored-sessions': {
    usage:
      'close-restored-sessions    after restoring a PostgreSQL backup and pg_restore: close what a restore closes (sessions, challenges, OpenID flows)',
    closesRestoredSessions: true,
    run: async (deps) => {
      const marker = join(deps.config.dataDir, CLOSE_SESSIONS_MARKER);
      // Only a restore waiting for it: run on a live deployment, it would sign everyone out.
      if (!existsSync(marker))
        throw new Error(`${marker}: missing; no restore into SVC_DATA_DIR waits for this step (nothing was changed)`);
      const from = (await readFile(marker, 'utf8')).trim();
      // What restore does on SQLite, here once pg_restore has loaded the dump.
      const closed = await closeRestoredDeployment(deps.stores, deps.clock, { keepSessions: false });
      await rm(marker, { force: true });
      // The decrypted dump restore left for pg_restore: loaded by now, and a plaintext copy of the database.
      const dump = join(deps.config.dataDir, PG_DUMP_FILE);
      const removed = existsSync(dump);
      await rm(dump, { force: true });
      return [
        describeClosing(closed, /taken (\S+)/.exec(from)?.[1] ?? 'the backup'),
        ...(removed ? [`removed ${dump} (the decrypted dump pg_restore loaded)`] : []),
        'the server may start now',
      ].join('\n');
    },
  },
  accounts: {
    usage:
      'accounts [--json]          every account: address (or sponsor), created, state, quota, open sessions, last use, TOTP, OpenID links',
    run: async (deps, [flag]) => {
      if (flag !== undefined && flag !== '--json') throw new Error(`accounts takes only --json, got "${flag}"`);
      const rows: AccountOverview[] = [];
      for await (const row of deps.operator.accounts()) rows.push(row);
      return flag === '--json' ? JSON.stringify(rows.map(accountJson), null, 2) : accountsTable(rows);
    },
  },
  sessions: {
    usage: "sessions <address|id>      an account's open sessions: id, how it signed in, created, last used, expires",
    run: async (deps, [who]) => {
      const id = await accountIdOf(deps, who);
      const sessions = await deps.operator.sessions(id);
      if (sessions.length === 0) return `${id} has no open sessions`;
      return table(
        ['SESSION', 'METHOD', 'CREATED', 'LAST USED', 'EXPIRES'],
        sessions.map((x) => [x.sessionId, x.method, iso(x.createdAt), iso(x.lastUsedAt), iso(x.expiresAt)]),
      );
    },
  },
  'revoke-sessions': {
    usage:
      'revoke-sessions <address|id>   end every session of an account, as its revoke-all does (it can sign in again)',
    run: async (deps, [who]) => {
      const id = await accountIdOf(deps, who);
      return `${endedLine(await deps.operator.revokeSessions(id))} of ${id}`;
    },
  },
  lock: {
    usage: 'lock <address|id>          lock an account (sign-in and password change refused) and end its sessions',
    run: async (deps, [who]) => {
      const id = await accountIdOf(deps, who);
      const ended = await deps.operator.lock(id);
      return `locked ${id}; ${endedLine(ended)}`;
    },
  },
  unlock: {
    usage: 'unlock <address|id>        unlock an account',
    run: async (deps, [who]) => {
      const id = await accountIdOf(deps, who);
      await deps.operator.unlock(id);
      return `unlocked ${id}`;
    },
  },
  'allow-registration': {
    usage:
      'allow-registration <address|@domain>   let an address, or every address at a domain, register while SVC_REGISTRATION=allowlist (every server sees it at its next registration)',
    run: async (deps, [what]) => {
      if (!what) throw new Error('name an address (ann@example.org) or a domain (@example.org)');
      const r = await deps.registration.allow(what);
      if (!r.ok) throw new Error(r.detail ?? r.code);
      const line = r.value.added
        ? `allowed to register: ${r.value.entry}`
        : `already allowed to register: ${r.value.entry}`;
      return deps.registration.mode === 'allowlist'
        ? line
        : `${line}\nnote: SVC_REGISTRATION is ${deps.registration.mode} here; the list applies only with SVC_REGISTRATION=allowlist`;
    },
  },
  'disallow-registration': {
    usage:
      'disallow-registration <address|@domain>   take an entry off the registration allowlist (accounts already made stay)',
    run: async (deps, [what]) => {
      if (!what) throw new Error('name an address (ann@example.org) or a domain (@example.org)');
      const r = await deps.registration.disallow(what);
      if (!r.ok) throw new Error(r.detail ?? r.code);
      if (!r.value.removed)
        return { code: 1, out: `error: ${r.value.entry} is not on the registration allowlist; nothing was changed` };
      return `no longer allowed to register: ${r.value.entry}`;
    },
  },
  'registration-allowlist': {
    usage: 'registration-allowlist     list who may register while SVC_REGISTRATION=allowlist',
    run: async (deps) => {
      const entries = await deps.registration.list();
      const head = `SVC_REGISTRATION=${deps.registration.mode}; ${entries.length} entr${entries.length === 1 ? 'y' : 'ies'} on the allowlist`;
      return [head, ...entries.map((e) => `  ${e.entry}  (added ${new Date(e.addedAt).toISOString()})`)].join('\n');
    },
  },
  'delete-account': {
    usage:
      'delete-account <address|id>   delete an account as DELETE /v1/auth/account does (its sponsored accounts with it); the address may register again, the handle stays retired',
    run: async (deps, [who]) => {
      const id = await accountIdOf(deps, who);
      const r = await deps.deletion.deleteByOperator({ id });
      if (!r.ok) throw new Error(`no account ${who} (${r.detail ?? r.code})`);
      const { erased, cancelledUploads, purgedAssets } = r.value;
      const sponsored = erased.length > 1 ? ` and its sponsored accounts ${erased.slice(1).join(', ')}` : '';
      return `deleted ${id}${sponsored}; ${cancelledUploads.length} uploads cancelled, ${purgedAssets} assets purged (the next gc-sweep credits their bytes)`;
    },
  },
  'quota-limits': {
    usage:
      "quota-limits <address|id> <soft|-|default> <hard|-|default>   set an account's limits in bytes (- = unlimited; default default = back to the deployment's)",
    run: async (deps, [who, soft, hard]) => {
      // An account has its own pair of limits or the deployment's, never one of each: a `default`
      // beside a value would drop the value (or take the deployment's for both), so it is refused.
      if ((soft === 'default') !== (hard === 'default')) {
        throw new Error(
          "default puts both limits back to the deployment's: give it for both (quota-limits <account> default default), or a value (bytes or -) for both; nothing was changed",
        );
      }
      const id = await accountIdOf(deps, who);
      const bytes = (x: string | undefined): number | null => {
        if (x === '-') return null;
        // Whole numbers a JSON number holds exactly (up to 2^53 - 1), never rounded on the way in.
        if (!x || !/^\d+$/.test(x) || !Number.isSafeInteger(Number(x)))
          throw new Error('limits are whole numbers of bytes up to 9007199254740991, or -');
        return Number(x);
      };
      const limits = hard === 'default' ? null : { soft: bytes(soft), hard: bytes(hard) };
      const r = await deps.quota.setLimits(id, limits);
      if (!r.ok) throw new Error(r.detail ?? r.code);
      return `limits of ${id}: soft ${r.value.softLimit ?? 'unlimited'}, hard ${r.value.hardLimit ?? 'unlimited'}; state ${r.value.state}`;
    },
  },
  suspend: {
    usage: "suspend <address|id>       suspend an account's quota (uploads and metadata growth refused)",
    run: async (deps, [who]) => {
      const id = await accountIdOf(deps, who);
      const r = await deps.quota.suspend(id);
      if (!r.ok) throw new Error(r.detail ?? r.code);
      return `suspended ${id}; state ${r.value.state}`;
    },
  },
  unsuspend: {
    usage: 'unsuspend <address|id>     lift a suspension',
    run: async (deps, [who]) => {
      const id = await accountIdOf(deps, who);
      return `unsuspended ${id}; state ${(await deps.quota.unsuspend(id)).state}`;
    },
  },
  sponsor: {
    usage:
      "sponsor <address|id> <sponsor address|id|->   charge an account's uploads to a sponsor (- ends it); one level: a sponsor pays for itself, and an account that sponsors others cannot be sponsored",
    run: async (deps, [who, by]) => {
      const id = await accountIdOf(deps, who);
      const sponsor = by === '-' ? null : await accountIdOf(deps, by);
      const r = await deps.sponsorship.setSponsor(id, sponsor);
      if (!r.ok) throw new Error(r.detail ?? r.code);
      return sponsor ? `${id} is sponsored by ${sponsor}` : `${id} pays for itself`;
    },
  },
  'gc-sweep': {
    usage: 'gc-sweep                   remove unreferenced blobs and credit their bytes to whoever was charged',
    run: async (deps) => {
      // Never beside a backup: it copies the ledger first and the blobs after.
      const path = join(deps.config.dataDir, MAINTENANCE_LOCK);
      const lock = await naming(path, () => takeFileLock(path, 'gc-sweep', deps.clock.now()));
      let r;
      let staged;
      let pruned;
      try {
        r = await deps.quota.sweep();
        // Then staged bytes no session in flight holds (expired elsewhere, or sent after a cancel).
        staged = await deps.uploads.sweepStaging();
        // And the sync removals past SVC_SYNC_TOMBSTONE_DAYS.
        pruned = await deps.sync.prune();
      } finally {
        await lock.release();
      }
      const credits = Object.entries(r.credited).map(([a, n]) => `  ${a}: -${n} bytes`);
      return [
        `swept ${r.swept.length} blobs, expired ${r.expiredUploads} upload sessions (federated fills included), discarded ${staged} staged uploads, removed ${r.unrecorded} stored blobs without a ledger entry, pruned ${pruned} sync removals older than ${deps.config.syncTombstoneDays} days`,
        ...credits,
      ].join('\n');
    },
  },
  blobs: {
    usage:
      'blobs verify               compare the blob store with the ledger: entries without objects, objects without entries, wrong sizes (exit 1 when any)',
    run: async (deps, [sub]) => {
      if (sub !== 'verify') throw new Error('usage: blobs verify');
      const r = await checkBlobStore(deps.stores.quota, deps.stores.blobs);
      const putBack =
        r.putBack === 0
          ? []
          : [
              `put back ${r.putBack} blob${r.putBack === 1 ? '' : 's'} the ledger names from quarantine, where a gc-sweep that stopped midway had left ${r.putBack === 1 ? 'it' : 'them'}`,
            ];
      const lines = [`${r.ledgerEntries} ledger entries, ${r.objects} objects in the blob store`];
      for (const b of r.missing) lines.push(`missing object: ${b.contentHash} (${b.size} bytes in the ledger)`);
      for (const b of r.unreferenced) lines.push(`object without a ledger entry: ${b.contentHash} (${b.size} bytes)`);
      for (const b of r.wrongSize)
        lines.push(`wrong size: ${b.contentHash} (ledger ${b.ledgerSize} bytes, stored ${b.storedSize})`);
      if (blobsAgree(r)) return [...putBack, `${lines[0]}: they agree`].join('\n');
      lines.unshift(...putBack);
      lines.push(
        '',
        "A missing object is never served (downloads of it answer 500 error.internal): restore it from a backup or the bucket's versions. An object without an entry is either a finalize in flight (check again) or bytes nobody is charged for, such as a stopped gc-sweep leaves (the next gc-sweep removes it).",
      );
      return { code: 1, out: lines.join('\n') };
    },
  },
  'revoke-capability': {
    usage: 'revoke-capability <jti>    revoke one capability token this server minted (listed in revoked-jti for 24 h)',
    run: async (deps, [jti]) => {
      if (!jti) throw new Error('name the token by its jti');
      if (!(await deps.federation.revoke(jti))) throw new Error(`no unrevoked capability token ${jti}`);
      return `revoked capability token ${jti}`;
    },
  },
  'revoke-peer-capabilities': {
    usage: 'revoke-peer-capabilities <peer base URL>   revoke every live capability token minted for a peer',
    run: async (deps, [peer]) => {
      if (!peer) throw new Error('name the peer by its base URL');
      const n = await deps.federation.revokePeer(peer);
      const base = peer.replace(/\/+$/, '');
      const line = `revoked ${n} capability token${n === 1 ? '' : 's'} minted for ${base}`;
      // Still done (tokens minted before a peer left the list live up to an hour), but a typo shows.
      const listed = deps.config.federationPeers.some((p) => p.replace(/\/+$/, '') === base);
      return listed ? line : `${line}\nnote: ${base} is not one of SVC_FEDERATION_PEERS`;
    },
  },
  ledger: {
    usage: "ledger <address|id>        show an account's quota ledger and the blobs charged to it",
    run: async (deps, [who]) => {
      const id = await accountIdOf(deps, who);
      const r = await deps.quota.report(id);
      return JSON.stringify(
        {
          account_id: id,
          charged_to: r.payerId,
          charged: r.record.charged,
          used: r.status.used,
          reserved: r.status.reserved,
          soft_limit: r.status.softLimit,
          hard_limit: r.status.hardLimit,
          state: r.status.state,
          grace_expires_at: r.status.graceExpiresAt === null ? null : new Date(r.status.graceExpiresAt).toISOString(),
          alerts: r.status.alerts,
          sponsor_id: r.record.sponsorId,
          suspended_at: r.record.suspendedAt,
          blobs: r.blobs.map((b) => ({
            content_hash: b.contentHash,
            size: b.size,
            peer: b.peer,
            stored_at: new Date(b.storedAt).toISOString(),
          })),
        },
        null,
        2,
      );
    },
  },
};

/**
 * Commands on the data directory and backups rather than through the stores: they must not open
 * (and so create or migrate) the database. Each failure is one line naming the file and the cause.
 */
type FileCommand = (config: Config, args: string[], options: ParsedOptions) => Promise<string>;

/** A command's `--name value` / `--name=value` options (repeatable ones keep every value) and bare flags. */
interface ParsedOptions {
  readonly values: ReadonlyMap<string, readonly string[]>;
  readonly flags: ReadonlySet<string>;
}
type OptionSpec = Readonly<Record<string, 'value' | 'repeat' | 'flag'>>;
const NO_OPTIONS: ParsedOptions = { values: new Map(), flags: new Set() };

/** Splits options from arguments; an unknown option, a missing value or a repeated single one is refused. */
function parseOptions(
  args: readonly string[],
  spec: OptionSpec,
): { positional: string[]; options: ParsedOptions } | { error: string } {
  const positional: string[] = [];
  const values = new Map<string, string[]>();
  const flags = new Set<string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    const kind = Object.hasOwn(spec, name) ? spec[name] : undefined;
    if (kind === undefined) return { error: `unknown option --${name}` };
    if (kind === 'flag') {
      if (eq !== -1) return { error: `--${name} takes no value` };
      flags.add(name);
      continue;
    }
    const value = eq === -1 ? args[++i] : arg.slice(eq + 1);
    if (value === undefined || value === '') return { error: `--${name} needs a value` };
    if (kind === 'value' && values.has(name)) return { error: `--${name} given twice` };
    values.set(name, [...(values.get(name) ?? []), value]);
  }
  return { positional, options: { values, flags } };
}

const one = (o: ParsedOptions, name: string): string | null => o.values.get(name)?.[0] ?? null;

/**
 * How `backup` (and a scheduled one, with no options) seals the backup: the command line's
 * --recipient / --passphrase-file / --unencrypted when any is given, else SVC_BACKUP_RECIPIENTS /
 * SVC_BACKUP_PASSPHRASE_FILE / SVC_BACKUP_UNENCRYPTED. With none of them, refused, naming the setting.
 */
export async function sealingFrom(config: Config, o: ParsedOptions = NO_OPTIONS): Promise<BackupSealing> {
  const onCommandLine = o.values.has('recipient') || o.values.has('passphrase-file') || o.flags.has('unencrypted');
  const recipients = onCommandLine ? (o.values.get('recipient') ?? []) : config.backupEncryption.recipients;
  const passphraseFile = onCommandLine ? one(o, 'passphrase-file') : config.backupEncryption.passphraseFile;
  const unencrypted = onCommandLine ? o.flags.has('unencrypted') : config.backupEncryption.unencrypted;
  const where = onCommandLine
    ? { r: '--recipient', p: '--passphrase-file', u: '--unencrypted' }
    : { r: 'SVC_BACKUP_RECIPIENTS', p: 'SVC_BACKUP_PASSPHRASE_FILE', u: 'SVC_BACKUP_UNENCRYPTED' };
  const chosen = chooseBackupSealing({
    recipients: recipients.length,
    passphrase: passphraseFile !== null,
    unencrypted,
  });
  if (!chosen.ok) {
    const { setting, cause } = chosen.problem;
    if (cause === 'contradicts_unencrypted')
      throw new BackupFailure({
        file: where.u,
        cause: `contradicts ${recipients.length > 0 ? where.r : where.p}; nothing was written`,
      });
    if (cause === 'recipients_and_passphrase')
      throw new BackupFailure({
        file: where.p,
        cause: `excludes ${where.r}: age encrypts to recipients or to one passphrase; nothing was written`,
      });
    throw new BackupFailure({
      file: setting === 'recipients' ? 'SVC_BACKUP_RECIPIENTS' : where.r,
      cause:
        'is not set: a backup is encrypted to its operator. Give --recipient age1… (repeatable; or SVC_BACKUP_RECIPIENTS; `backup-keygen` makes one), or --passphrase-file <file> (or SVC_BACKUP_PASSPHRASE_FILE), or --unencrypted (SVC_BACKUP_UNENCRYPTED=1) for a backup that never holds the secret key; nothing was written',
    });
  }
  if (chosen.sealing === 'recipients') {
    checkRecipients(recipients, where.r);
    return { kind: 'recipients', recipients };
  }
  if (chosen.sealing === 'passphrase')
    return {
      kind: 'passphrase',
      passphrase: await readPassphraseFile(passphraseFile!, where.p),
      from: passphraseFile!,
    };
  return { kind: 'none' };
}

/** What opens an encrypted backup: --identity-file (else SVC_BACKUP_IDENTITY_FILE) and/or --passphrase-file (else SVC_BACKUP_PASSPHRASE_FILE). */
async function openerFrom(config: Config, o: ParsedOptions): Promise<BackupOpener | null> {
  const identityFile = one(o, 'identity-file') ?? config.backupEncryption.identityFile;
  const passphraseFile = one(o, 'passphrase-file') ?? config.backupEncryption.passphraseFile;
  if (identityFile === null && passphraseFile === null) return null;
  return {
    identities:
      identityFile === null
        ? []
        : await readIdentityFile(
            identityFile,
            one(o, 'identity-file') !== null ? '--identity-file' : 'SVC_BACKUP_IDENTITY_FILE',
          ),
    identityFile,
    passphrase:
      passphraseFile === null
        ? null
        : await readPassphraseFile(
            passphraseFile,
            one(o, 'passphrase-file') !== null ? '--passphrase-file' : 'SVC_BACKUP_PASSPHRASE_FILE',
          ),
    passphraseFile,
  };
}

/** `--key-file`: the data directory's secret.key, kept apart from an unencrypted backup. */
async function keyFileFrom(o: ParsedOptions): Promise<{ path: string; key: Uint8Array } | null> {
  const path = one(o, 'key-file');
  if (path === null) return null;
  return { path, key: parseKeyText(await naming(path, () => readFile(path, 'utf8')), path) };
}

/** What a restore closed, in one line, with the backup's time. */
function describeClosing(
  closed: {
    at: number | null;
    sessions: number;
    secondFactorChallenges: number;
    revokeAllChallenges: number;
    oidcLoginCodes: number;
    oidcFlows: number;
    signInTickets: number;
  },
  takenAt: string,
): string {
  if (closed.at === null)
    return `kept every session as of the backup (${takenAt}), --keep-sessions: sessions revoked after it are open again`;
  return (
    `closed what was open at the backup (${takenAt}): ${closed.sessions} sessions, ${closed.secondFactorChallenges} second-factor challenges, ` +
    `${closed.revokeAllChallenges} revoke-all challenges, ${closed.oidcLoginCodes} OpenID login codes, ${closed.oidcFlows} OpenID flows, ${closed.signInTickets} sign-in tickets; everyone signs in again`
  );
}

function backupDirArg(args: string[], what: string): string {
  const dir = args[0];
  if (!dir || args.length > 1) throw new BackupFailure({ file: 'usage', cause: `npm run cli -- ${what} <dir>` });
  return dir;
}

const OPEN_OPTIONS: OptionSpec = { 'identity-file': 'value', 'passphrase-file': 'value', 'key-file': 'value' };

export const FILE_COMMANDS: Record<
  string,
  { usage: string; run: FileCommand; hidden?: boolean; options?: OptionSpec }
> = {
  backup: {
    usage:
      'backup <dir>               copy the database (online), the key and the blobs into a new or empty dir, age-encrypted: --recipient age1… (repeatable) | --passphrase-file <file> | --unencrypted (never holds the key)',
    options: { recipient: 'repeat', 'passphrase-file': 'value', unencrypted: 'flag' },
    run: async (config, args, o) => {
      const dir = backupDirArg(args, 'backup');
      const sealing = await sealingFrom(config, o);
      const r = await takeBackup(config, dir, { now: () => systemClock.now(), sealing });
      const enc = r.info.encryption === 'none' ? '' : '.age';
      const lines = [
        `backup written to ${r.dir}`,
        `  encryption: ${r.info.encryption === 'age-x25519' ? `age, to ${sealing.kind === 'recipients' ? sealing.recipients.length : 0} X25519 recipient(s)` : r.info.encryption === 'age-passphrase' ? 'age, to the passphrase' : 'NONE (--unencrypted): the database is in the clear; the key is not in it'}`,
        `  database: ${r.info.database === 'sqlite' ? `strongroom.db${enc} (SQLite online snapshot, schema version ${r.info.schema_version})` : `strongroom.pgdump${enc} (pg_dump of the snapshot the blob list was read in; restore prints the pg_restore step)`}`,
        `  secret key: ${r.info.key_in_backup ? 'secret.key.age' : `NOT in the backup (${r.info.encryption === 'none' ? 'an unencrypted backup never holds it' : 'it comes from SVC_SECRET_KEY'}): keep it apart; restore needs it (--key-file or SVC_SECRET_KEY)`}`,
        `  blobs: ${r.info.blobs} referenced by the ledger, ${r.info.blob_bytes} bytes${r.info.blob_mode === 'manifest' ? ' (listed in objects.txt; the object store keeps the bytes)' : ' (copied as stored: client-side ciphertext)'}`,
      ];
      if (r.pgDump) lines.push(`  ran: ${r.pgDump}`);
      lines.push(
        '',
        `${r.manifestName} (with a MAC under the server key; verify with: npm run cli -- verify-backup ${r.dir}):`,
        r.manifest.trimEnd(),
      );
      return lines.join('\n');
    },
  },
  'verify-backup': {
    usage:
      'verify-backup <dir>        check a backup: it decrypts (--identity-file | --passphrase-file), its MAC verifies, its schema is accepted, its key opens the sealed secrets, every blob and file matches',
    options: OPEN_OPTIONS,
    run: async (config, args, o) => {
      const dir = backupDirArg(args, 'verify-backup');
      const [opener, keyFile] = [await openerFrom(config, o), await keyFileFrom(o)];
      // An object-store backup is checked against the store configured here (SVC_BLOB_URL).
      const objects = (config.blobStore?.kind ?? 'file') === 'file' ? null : await openBlobStore(config);
      let v;
      try {
        v = await verifyBackup(dir, { envKey: config.secretKey, keyFile, opener, objects: objects?.blobs ?? null });
      } finally {
        objects?.close();
      }
      await v.dispose();
      const keyName =
        v.keySource === 'backup' ? 'secret.key.age' : v.keySource === '--key-file' ? keyFile!.path : 'SVC_SECRET_KEY';
      return (
        `backup ${dir} verified (taken ${v.info.created_at}, encryption ${v.info.encryption}): manifest MAC verifies under ${keyName}, ` +
        `${v.info.database === 'sqlite' ? `database opens, schema version ${v.info.schema_version} accepted` : 'PostgreSQL dump matches its SHA-256 (its contents are checked by pg_restore)'}, ` +
        (v.info.database === 'sqlite'
          ? `${v.sealedValues} sealed secrets open with ${keyName}, `
          : `${keyName} is the key the database was sealed under, `) +
        `${v.info.blob_mode === 'copy' ? `${v.blobs.length} blobs present with their SHA-256` : `${v.blobs.length} objects present in the object store at their sizes`}, ${v.entries.length} files match the manifest`
      );
    },
  },
  restore: {
    usage:
      'restore <dir>              restore a backup into an empty SVC_DATA_DIR (verified first; --identity-file | --passphrase-file, --key-file); closes every session as backed up unless --keep-sessions',
    options: { ...OPEN_OPTIONS, 'keep-sessions': 'flag' },
    run: async (config, args, o) => {
      const dir = backupDirArg(args, 'restore');
      const [opener, keyFile] = [await openerFrom(config, o), await keyFileFrom(o)];
      const r = await restoreBackup(config, dir, {
        opener,
        keyFile,
        keepSessions: o.flags.has('keep-sessions'),
        clock: systemClock,
      });
      const blobs =
        r.backup.info.blob_mode === 'copy'
          ? `${r.backup.blobs.length} blobs`
          : `${r.backup.blobs.length} objects left in the object store (start with the same SVC_BLOB_URL)`;
      const key =
        config.secretKey !== null
          ? 'no key file (start with the same SVC_SECRET_KEY)'
          : r.backup.keySource === 'backup'
            ? 'secret.key from the backup'
            : `secret.key from ${keyFile?.path ?? 'SVC_SECRET_KEY'}`;
      const lines = [`restored ${dir} (taken ${r.backup.info.created_at}) into ${r.dataDir}: ${blobs}, ${key}`];
      if (r.closed !== null) lines.push(describeClosing(r.closed, r.backup.info.created_at));
      if (r.pgRestore) {
        lines.push('now restore the database:', `  ${r.pgRestore}`);
        if (r.pendingClose)
          lines.push(
            'then close what was open at the backup (the server refuses to start until then):',
            '  npm run cli -- close-restored-sessions',
          );
        else
          lines.push(
            describeClosing(
              {
                at: null,
                sessions: 0,
                secondFactorChallenges: 0,
                revokeAllChallenges: 0,
                oidcLoginCodes: 0,
                oidcFlows: 0,
                signInTickets: 0,
              },
              r.backup.info.created_at,
            ),
          );
      }
      lines.push(`start the server with SVC_DATA_DIR=${r.dataDir}`);
      return lines.join('\n');
    },
  },
  'backup-keygen': {
    usage:
      'backup-keygen <file>       write a new age identity to a new file (0600, as age-keygen -o) and print its recipient for --recipient / SVC_BACKUP_RECIPIENTS',
    run: async (_config, args) => {
      const path = args[0];
      if (!path) throw new BackupFailure({ file: 'usage', cause: 'npm run cli -- backup-keygen <file>' });
      const { identityFile, recipient } = await newIdentity(new Date(systemClock.now()));
      await naming(path, () => writeFile(path, identityFile, { flag: 'wx', mode: 0o600 }));
      return [
        `age identity written to ${path} (keep it off this machine: whoever holds it opens the backups)`,
        `recipient: ${recipient}`,
        `back up with: npm run cli -- backup --recipient ${recipient} <dir>   (or SVC_BACKUP_RECIPIENTS=${recipient})`,
        `open with:    npm run cli -- verify-backup --identity-file ${path} <dir>`,
      ].join('\n');
    },
  },
  'backup-scheduled': {
    usage: 'backup-scheduled           one run of the SVC_BACKUP_DIR schedule (the server starts it)',
    hidden: true,
    run: async (config) =>
      JSON.stringify(await runScheduledBackup(config, () => systemClock.now(), await sealingFrom(config))),
  },
};

/**
 * How many arguments a command's usage line names (`lock <address|id>`: 1; `blobs verify`: 1): more
 * is a mistake to refuse, not to ignore (an operator who typed one too many meant something else).
 */
function arity(usage: string): number {
  const synopsis = usage.split(/\s{2,}/)[0]!;
  return (synopsis.match(/<[^>]*>|\S+/g) ?? []).length - 1;
}

export async function runCli(
  argv: string[],
  env: Record<string, string | undefined> = process.env,
): Promise<{ code: number; out: string }> {
  const [name, ...rest] = argv;
  let args = rest;
  const usages = [...Object.values(COMMANDS), ...Object.values(FILE_COMMANDS).filter((c) => !c.hidden)].map(
    (c) => `  ${c.usage}`,
  );
  const usage = `usage: npm run cli -- <command>\n\n${usages.join('\n')}`;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') return { code: 0, out: usage };
  const known = Object.hasOwn(FILE_COMMANDS, name)
    ? FILE_COMMANDS[name]
    : Object.hasOwn(COMMANDS, name)
      ? COMMANDS[name]
      : undefined;
  const fileCommand = Object.hasOwn(FILE_COMMANDS, name) ? FILE_COMMANDS[name] : undefined;
  let options = NO_OPTIONS;
  if (fileCommand?.options !== undefined) {
    const parsed = parseOptions(args, fileCommand.options);
    if ('error' in parsed)
      return {
        code: 2,
        out: `${name}: ${parsed.error}; nothing was done\n\nusage: npm run cli -- ${fileCommand.usage}`,
      };
    args = parsed.positional;
    options = parsed.options;
  }
  if (known !== undefined && args.length > arity(known.usage)) {
    return {
      code: 2,
      out: `${name}: unexpected argument ${JSON.stringify(args[arity(known.usage)])}; nothing was done\n\nusage: npm run cli -- ${known.usage}`,
    };
  }
  if (fileCommand) {
    try {
      return { code: 0, out: await fileCommand.run(readConfig(env), args, options) };
    } catch (err) {
      if (err instanceof NoDeploymentError) return { code: 1, out: noDeployment(readConfig(env), err) };
      const line =
        err instanceof BackupFailure ? describeBackupProblem(err.problem) : ((err as Error)?.message ?? String(err));
      return { code: 1, out: `error: ${line.replace(/\s*\n\s*/g, ' ')}` };
    }
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) return { code: 2, out: `unknown command: ${name}\n\n${usage}` };
  let config: Config;
  try {
    config = readConfig(env);
  } catch (err) {
    // A bad setting is named in one line, as the server names it at start; never a stack trace.
    if (err instanceof ConfigError) return { code: 1, out: `configuration error: ${err.message}` };
    throw err;
  }
  const platform = { ...nodePlatform(), logger: { info() {}, warn() {}, error() {} } };
  const create = command.createsDeployment ?? false;
  let stores: Awaited<ReturnType<typeof openStores>>;
  try {
    stores = await openStores(config, { create, closingRestoredSessions: command.closesRestoredSessions ?? false });
  } catch (err) {
    if (err instanceof NoDeploymentError) return { code: 1, out: noDeployment(config, err) };
    // A data directory that is a file, a database that is not one, a restore left unfinished: one
    // line naming it, never a stack trace.
    return {
      code: 1,
      out: `${err instanceof ConfigError ? 'configuration error' : 'error'}: ${(err as Error)?.message ?? String(err)}`,
    };
  }
  try {
    const deps = await buildDeps(config, stores, platform, { adoptBaseUrl: command.adoptsBaseUrl ?? false, create });
    const done = await command.run(deps, args);
    return typeof done === 'string' ? { code: 0, out: done } : done;
  } catch (err) {
    return { code: 1, out: `error: ${(err as Error).message}` };
  } finally {
    await stores.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runCli(process.argv.slice(2)).then(
    ({ code, out }) => {
      process.stdout.write(`${out}\n`);
      process.exit(code);
    },
    (err: unknown) => {
      process.stdout.write(`error: ${(err as Error)?.message ?? String(err)}\n`);
      process.exit(1);
    },
  );
}
