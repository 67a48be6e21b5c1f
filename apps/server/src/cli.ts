import { join } from 'node:path';
import { blobsAgree, checkBlobStore, type AccountOverview, describeBackupProblem, findAccountByAddress, MANIFEST_FILE, NoDeploymentError, normalizeAddress, parseRfc3339Instant } from '@strongroom/core';
import { systemClock, takeFileLock } from '@strongroom/adapters-node';
import { ConfigError, readConfig, type Config } from './config.js';
import { buildDeps, nodePlatform, openStores, type AppDeps } from './deps.js';
import { BackupFailure, MAINTENANCE_LOCK, naming } from './backup/files.js';
import { restoreBackup } from './backup/restore.js';
import { openBlobStore } from './blob-store.js';
import { runScheduledBackup } from './backup/schedule.js';
import { takeBackup } from './backup/take.js';
import { verifyBackup } from './backup/verify.js';
import { redactedUrl } from './startup-checks.js';

/** Operator commands. Each takes the same environment as the server and talks to its database. */
/** A command's output; `{ code, out }` when it ends with a finding rather than an error (exit status `code`). */
type Command = (deps: AppDeps, args: string[]) => Promise<string | { code: number; out: string }>;

/** Where the configuration points: the setting an operator would correct, never a password. */
const deploymentSetting = (config: Config): string =>
  config.databaseUrl === null ? `SVC_DATA_DIR=${config.dataDir}` : `SVC_DATABASE_URL=${redactedUrl(config.databaseUrl)}`;

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
    throw new Error(`effective_at must be an RFC 3339 instant on a real calendar date, such as 2027-03-01T00:00:00Z, got "${text}"`);
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
  return [head, ...rows].map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n');
}

function accountsTable(rows: AccountOverview[]): string {
  if (rows.length === 0) return 'no accounts';
  const body = rows.map((a) => [
    a.id,
    a.address ?? (a.sponsor ? `(sponsored by ${a.sponsor.address ?? a.sponsor.id})` : '(no address)'),
    iso(a.createdAt).slice(0, 10),
    a.locked ? 'locked' : 'active',
    `${a.quota.state} ${bytes(a.quota.used)} (${bytes(a.quota.reserved)} reserved) of ${bytes(a.quota.hardLimit)}${a.quota.chargedTo === a.id ? '' : ' (sponsor\'s)'}`,
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
    quota: { charged_to: a.quota.chargedTo, state: a.quota.state, used: a.quota.used, reserved: a.quota.reserved, soft_limit: a.quota.softLimit, hard_limit: a.quota.hardLimit },
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
export const COMMANDS: Record<string, { usage: string; run: Command; adoptsBaseUrl?: boolean; createsDeployment?: boolean }> = {
  init: {
    usage: 'init                       create the deployment SVC_DATA_DIR (or SVC_DATABASE_URL) names, as the server\'s first start does; one already there is left as it is',
    createsDeployment: true,
    run: async (deps) => `deployment ready at ${deploymentSetting(deps.config)}${deps.config.databaseUrl === null ? '' : ` (key and file blobs under SVC_DATA_DIR=${deps.config.dataDir})`}`,
  },
  'adopt-base-url': {
    usage: 'adopt-base-url             record SVC_BASE_URL as the deployment\'s token issuer (after moving it; stop every process first)',
    adoptsBaseUrl: true,
    run: async (deps) => `the database now records ${deps.config.baseUrl} as the token issuer; start every process with this SVC_BASE_URL`,
  },
  'rotate-key': {
    usage: 'rotate-key                 retire the signing key and start signing with a new one',
    run: async (deps) => {
      const next = await deps.keyRing.rotate();
      return `signing key rotated; new kid ${next.kid}; running servers sign with it within a minute, and the old key verifies for ${deps.config.keyGraceMs / 1000} s after that`;
    },
  },
  deprecate: {
    usage: 'deprecate <version> <effective_at>   announce that from effective_at (RFC 3339) the Min becomes version (at least SVC_DEPRECATION_NOTICE_S away)',
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
  accounts: {
    usage: 'accounts [--json]          every account: address (or sponsor), created, state, quota, open sessions, last use, TOTP, OpenID links',
    run: async (deps, [flag]) => {
      if (flag !== undefined && flag !== '--json') throw new Error(`accounts takes only --json, got "${flag}"`);
      const rows: AccountOverview[] = [];
      for await (const row of deps.operator.accounts()) rows.push(row);
      return flag === '--json' ? JSON.stringify(rows.map(accountJson), null, 2) : accountsTable(rows);
    },
  },
  sessions: {
    usage: 'sessions <address|id>      an account\'s open sessions: id, how it signed in, created, last used, expires',
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
    usage: 'revoke-sessions <address|id>   end every session of an account, as its revoke-all does (it can sign in again)',
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
    usage: 'allow-registration <address|@domain>   let an address, or every address at a domain, register while SVC_REGISTRATION=allowlist (every server sees it at its next registration)',
    run: async (deps, [what]) => {
      if (!what) throw new Error('name an address (ann@example.org) or a domain (@example.org)');
      const r = await deps.registration.allow(what);
      if (!r.ok) throw new Error(r.detail ?? r.code);
      const line = r.value.added ? `allowed to register: ${r.value.entry}` : `already allowed to register: ${r.value.entry}`;
      return deps.registration.mode === 'allowlist' ? line : `${line}\nnote: SVC_REGISTRATION is ${deps.registration.mode} here; the list applies only with SVC_REGISTRATION=allowlist`;
    },
  },
  'disallow-registration': {
    usage: 'disallow-registration <address|@domain>   take an entry off the registration allowlist (accounts already made stay)',
    run: async (deps, [what]) => {
      if (!what) throw new Error('name an address (ann@example.org) or a domain (@example.org)');
      const r = await deps.registration.disallow(what);
      if (!r.ok) throw new Error(r.detail ?? r.code);
      if (!r.value.removed) return { code: 1, out: `error: ${r.value.entry} is not on the registration allowlist; nothing was changed` };
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
    usage: 'delete-account <address|id>   delete an account as DELETE /v1/auth/account does (its sponsored accounts with it); the address may register again, the handle stays retired',
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
    usage: 'quota-limits <address|id> <soft|-|default> <hard|-|default>   set an account\'s limits in bytes (- = unlimited; default default = back to the deployment\'s)',
    run: async (deps, [who, soft, hard]) => {
      // An account has its own pair of limits or the deployment's, never one of each: a `default`
      // beside a value would drop the value (or take the deployment's for both), so it is refused.
      if ((soft === 'default') !== (hard === 'default')) {
        throw new Error('default puts both limits back to the deployment\'s: give it for both (quota-limits <account> default default), or a value (bytes or -) for both; nothing was changed');
      }
      const id = await accountIdOf(deps, who);
      const bytes = (x: string | undefined): number | null => {
        if (x === '-') return null;
        // Whole numbers a JSON number holds exactly (up to 2^53 - 1), never rounded on the way in.
        if (!x || !/^\d+$/.test(x) || !Number.isSafeInteger(Number(x))) throw new Error('limits are whole numbers of bytes up to 9007199254740991, or -');
        return Number(x);
      };
      const limits = hard === 'default' ? null : { soft: bytes(soft), hard: bytes(hard) };
      const r = await deps.quota.setLimits(id, limits);
      if (!r.ok) throw new Error(r.detail ?? r.code);
      return `limits of ${id}: soft ${r.value.softLimit ?? 'unlimited'}, hard ${r.value.hardLimit ?? 'unlimited'}; state ${r.value.state}`;
    },
  },
  suspend: {
    usage: 'suspend <address|id>       suspend an account\'s quota (uploads and metadata growth refused)',
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
    usage: 'sponsor <address|id> <sponsor address|id|->   charge an account\'s uploads to a sponsor (- ends it); one level: a sponsor pays for itself, and an account that sponsors others cannot be sponsored',
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
      return [`swept ${r.swept.length} blobs, expired ${r.expiredUploads} upload sessions (federated fills included), discarded ${staged} staged uploads, removed ${r.unrecorded} stored blobs without a ledger entry, pruned ${pruned} sync removals older than ${deps.config.syncTombstoneDays} days`, ...credits].join('\n');
    },
  },
  blobs: {
    usage: 'blobs verify               compare the blob store with the ledger: entries without objects, objects without entries, wrong sizes (exit 1 when any)',
    run: async (deps, [sub]) => {
      if (sub !== 'verify') throw new Error('usage: blobs verify');
      const r = await checkBlobStore(deps.stores.quota, deps.stores.blobs);
      const putBack = r.putBack === 0 ? [] : [`put back ${r.putBack} blob${r.putBack === 1 ? '' : 's'} the ledger names from quarantine, where a gc-sweep that stopped midway had left ${r.putBack === 1 ? 'it' : 'them'}`];
      const lines = [`${r.ledgerEntries} ledger entries, ${r.objects} objects in the blob store`];
      for (const b of r.missing) lines.push(`missing object: ${b.contentHash} (${b.size} bytes in the ledger)`);
      for (const b of r.unreferenced) lines.push(`object without a ledger entry: ${b.contentHash} (${b.size} bytes)`);
      for (const b of r.wrongSize) lines.push(`wrong size: ${b.contentHash} (ledger ${b.ledgerSize} bytes, stored ${b.storedSize})`);
      if (blobsAgree(r)) return [...putBack, `${lines[0]}: they agree`].join('\n');
      lines.unshift(...putBack);
      lines.push('', 'A missing object is never served (downloads of it answer 500 error.internal): restore it from a backup or the bucket\'s versions. An object without an entry is either a finalize in flight (check again) or bytes nobody is charged for, such as a stopped gc-sweep leaves (the next gc-sweep removes it).');
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
    usage: 'ledger <address|id>        show an account\'s quota ledger and the blobs charged to it',
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
          blobs: r.blobs.map((b) => ({ content_hash: b.contentHash, size: b.size, peer: b.peer, stored_at: new Date(b.storedAt).toISOString() })),
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
type FileCommand = (config: Config, args: string[]) => Promise<string>;

function backupDirArg(args: string[], what: string): string {
  const dir = args[0];
  if (!dir || args.length > 1) throw new BackupFailure({ file: 'usage', cause: `npm run cli -- ${what} <dir>` });
  return dir;
}

export const FILE_COMMANDS: Record<string, { usage: string; run: FileCommand; hidden?: boolean }> = {
  backup: {
    usage: 'backup <dir>               copy the database (online), the secret key and the blobs into a new or empty dir, with a SHA-256 manifest',
    run: async (config, args) => {
      const dir = backupDirArg(args, 'backup');
      const r = await takeBackup(config, dir, { now: () => systemClock.now() });
      const lines = [
        `backup written to ${r.dir}`,
        `  database: ${r.info.database === 'sqlite' ? `strongroom.db (SQLite online snapshot, schema version ${r.info.schema_version})` : 'strongroom.pgdump (pg_dump of the snapshot the blob list was read in; restore it with pg_restore)'}`,
        `  secret key: ${r.info.key_in_backup ? 'secret.key' : 'NOT copied (it comes from SVC_SECRET_KEY): keep that value with this backup, it cannot be restored without it'}`,
        `  blobs: ${r.info.blobs} referenced by the ledger, ${r.info.blob_bytes} bytes${r.info.blob_mode === 'manifest' ? ' (listed in objects.txt; the object store keeps the bytes)' : ''}`,
      ];
      if (r.pgDump) lines.push(`  ran: ${r.pgDump}`);
      lines.push('', `${MANIFEST_FILE} (check with: cd ${r.dir} && sha256sum -c ${MANIFEST_FILE}):`, r.manifest.trimEnd());
      return lines.join('\n');
    },
  },
  'verify-backup': {
    usage: 'verify-backup <dir>        check a backup: it opens, its schema is accepted, its key opens the sealed secrets, every blob and file matches',
    run: async (config, args) => {
      const dir = backupDirArg(args, 'verify-backup');
      // An object-store backup is checked against the store configured here (SVC_BLOB_URL).
      const objects = (config.blobStore?.kind ?? 'file') === 'file' ? null : await openBlobStore(config);
      let v;
      try {
        v = await verifyBackup(dir, { envKey: config.secretKey, objects: objects?.blobs ?? null });
      } finally {
        objects?.close();
      }
      return (
        `backup ${dir} verified: ${v.info.database === 'sqlite' ? `database opens, schema version ${v.info.schema_version} accepted` : 'PostgreSQL dump matches its SHA-256 (its contents are checked by pg_restore)'}, ` +
        (v.info.database === 'sqlite'
          ? `${v.sealedValues} sealed secrets open with ${v.keyFromBackup ? 'secret.key' : 'SVC_SECRET_KEY'}, `
          : `${v.keyFromBackup ? 'secret.key' : 'SVC_SECRET_KEY'} is the key the database was sealed under, `) +
        `${v.info.blob_mode === 'copy' ? `${v.blobs.length} blobs present with their SHA-256` : `${v.blobs.length} objects present in the object store at their sizes`}, ${v.entries.length} files match ${MANIFEST_FILE}`
      );
    },
  },
  restore: {
    usage: 'restore <dir>              restore a backup into an empty SVC_DATA_DIR (verified first; refused if the dir is not empty)',
    run: async (config, args) => {
      const dir = backupDirArg(args, 'restore');
      const r = await restoreBackup(config, dir);
      const blobs = r.backup.info.blob_mode === 'copy' ? `${r.backup.blobs.length} blobs` : `${r.backup.blobs.length} objects left in the object store (start with the same SVC_BLOB_URL)`;
      const lines = [`restored ${dir} into ${r.dataDir}: ${blobs}, ${r.backup.keyFromBackup ? 'secret.key' : 'no key file (start with the same SVC_SECRET_KEY)'}`];
      if (r.pgRestore) lines.push('now restore the database:', `  ${r.pgRestore}`);
      lines.push(`start the server with SVC_DATA_DIR=${r.dataDir}`);
      return lines.join('\n');
    },
  },
  'backup-scheduled': {
    usage: 'backup-scheduled           one run of the SVC_BACKUP_DIR schedule (the server starts it)',
    hidden: true,
    run: async (config) => JSON.stringify(await runScheduledBackup(config, () => systemClock.now())),
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

export async function runCli(argv: string[], env: Record<string, string | undefined> = process.env): Promise<{ code: number; out: string }> {
  const [name, ...args] = argv;
  const usages = [...Object.values(COMMANDS), ...Object.values(FILE_COMMANDS).filter((c) => !c.hidden)].map((c) => `  ${c.usage}`);
  const usage = `usage: npm run cli -- <command>\n\n${usages.join('\n')}`;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') return { code: 0, out: usage };
  const known = Object.hasOwn(FILE_COMMANDS, name) ? FILE_COMMANDS[name] : Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (known !== undefined && args.length > arity(known.usage)) {
    return { code: 2, out: `${name}: unexpected argument ${JSON.stringify(args[arity(known.usage)])}; nothing was done\n\nusage: npm run cli -- ${known.usage}` };
  }
  const fileCommand = Object.hasOwn(FILE_COMMANDS, name) ? FILE_COMMANDS[name] : undefined;
  if (fileCommand) {
    try {
      return { code: 0, out: await fileCommand.run(readConfig(env), args) };
    } catch (err) {
      if (err instanceof NoDeploymentError) return { code: 1, out: noDeployment(readConfig(env), err) };
      const line = err instanceof BackupFailure ? describeBackupProblem(err.problem) : ((err as Error)?.message ?? String(err));
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
    stores = await openStores(config, { create });
  } catch (err) {
    if (err instanceof NoDeploymentError) return { code: 1, out: noDeployment(config, err) };
    // A data directory that is a file, a database that is not one, a restore left unfinished: one
    // line naming it, never a stack trace.
    return { code: 1, out: `${err instanceof ConfigError ? 'configuration error' : 'error'}: ${(err as Error)?.message ?? String(err)}` };
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
      process.stdout.write(out + '\n');
      process.exit(code);
    },
    (err: unknown) => {
      process.stdout.write(`error: ${(err as Error)?.message ?? String(err)}\n`);
      process.exit(1);
    },
  );
}
