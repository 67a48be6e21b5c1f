import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { Decrypter, Encrypter, generateX25519Identity, identityToRecipient } from 'age-encryption';
import { BackupFailure, causeOf, naming, writeStream } from './files.js';

/**
 * How a backup is sealed to its operator, with age (the `age-encryption` package): to X25519
 * recipients (`age1…`), or to a passphrase (scrypt), or not at all when the operator asked for it
 * (`--unencrypted`), in which case the backup never holds the secret key.
 */
export type BackupSealing =
  | { readonly kind: 'recipients'; readonly recipients: readonly string[] }
  | { readonly kind: 'passphrase'; readonly passphrase: string; readonly from: string }
  | { readonly kind: 'none' };

/** What opens an encrypted backup: identities from an age identity file, or a passphrase. */
export interface BackupOpener {
  readonly identities: readonly string[];
  /** Where the identities came from (named when none matches). */
  readonly identityFile: string | null;
  readonly passphrase: string | null;
  readonly passphraseFile: string | null;
}

/** An age X25519 recipient as `age-keygen -y` prints it: `age1` and 58 bech32 characters. */
export const X25519_RECIPIENT = /^age1[qpzry9x8gf2tvdw0s3jn54khce6mua7l]{58}$/;

/** Checks each recipient by encrypting to it (a typo in the checksum is caught here, not at restore). */
export function checkRecipients(recipients: readonly string[], setting: string): void {
  for (const r of recipients) {
    const fail = (why: string) =>
      new BackupFailure({ file: setting, cause: `"${r.slice(0, 80)}" is not an age X25519 recipient (age1…): ${why}` });
    if (!X25519_RECIPIENT.test(r))
      throw fail('expected age1 and 58 bech32 characters, as age-keygen -y or backup-keygen prints');
    try {
      new Encrypter().addRecipient(r);
    } catch (err) {
      throw fail((err as Error).message);
    }
  }
}

/** The passphrase in a file: its first line, without the line ending; an empty one is refused. */
export async function readPassphraseFile(path: string, setting = '--passphrase-file'): Promise<string> {
  const text = await naming(path, () => readFile(path, 'utf8'));
  const line = text.split(/\r?\n/)[0] ?? '';
  if (line === '') throw new BackupFailure({ file: path, cause: `(${setting}) holds no passphrase on its first line` });
  return line;
}

/** The identities in an age identity file, as `age -i` reads it: one per line, `#` comments and blank lines skipped. */
export async function readIdentityFile(path: string, setting = '--identity-file'): Promise<string[]> {
  const text = await naming(path, () => readFile(path, 'utf8'));
  const identities: string[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (!/^AGE-SECRET-KEY-(PQ-)?1[0-9A-Z]+$/.test(line)) {
      throw new BackupFailure({
        file: path,
        cause: `(${setting}) holds a line that is not an age identity (AGE-SECRET-KEY-1…)`,
      });
    }
    try {
      await identityToRecipient(line);
    } catch {
      throw new BackupFailure({
        file: path,
        cause: `(${setting}) holds an age identity that does not decode (a damaged or mistyped key)`,
      });
    }
    identities.push(line);
  }
  if (identities.length === 0) throw new BackupFailure({ file: path, cause: `(${setting}) holds no age identity` });
  return identities;
}

/** A new X25519 identity file's text and its recipient, as `age-keygen` writes them. */
export async function newIdentity(now: Date): Promise<{ identityFile: string; recipient: string }> {
  const identity = await generateX25519Identity();
  const recipient = await identityToRecipient(identity);
  return { identityFile: `# created: ${now.toISOString()}\n# public key: ${recipient}\n${identity}\n`, recipient };
}

function encrypter(sealing: Exclude<BackupSealing, { kind: 'none' }>): Encrypter {
  const e = new Encrypter();
  if (sealing.kind === 'passphrase') e.setPassphrase(sealing.passphrase);
  else for (const r of sealing.recipients) e.addRecipient(r);
  return e;
}

/** Encrypts the file at `source` into a new file `target` (streamed, fsynced); its SHA-256 and size. */
export async function encryptFile(
  source: string,
  target: string,
  sealing: Exclude<BackupSealing, { kind: 'none' }>,
): Promise<{ sha256: string; size: number }> {
  const input = Readable.toWeb(createReadStream(source, { highWaterMark: 1 << 20 })) as ReadableStream<Uint8Array>;
  const out = await encrypter(sealing).encrypt(input);
  return writeStream(target, Readable.fromWeb(out as unknown as import('node:stream/web').ReadableStream<Uint8Array>));
}

/** Encrypts bytes into a new file `target`. */
export async function encryptBytes(
  bytes: Uint8Array,
  target: string,
  sealing: Exclude<BackupSealing, { kind: 'none' }>,
): Promise<{ sha256: string; size: number }> {
  const out = await encrypter(sealing).encrypt(bytes);
  return writeStream(
    target,
    (async function* () {
      yield out;
    })(),
  );
}

function decrypter(opener: BackupOpener): Decrypter {
  const d = new Decrypter();
  for (const i of opener.identities) d.addIdentity(i);
  if (opener.passphrase !== null) d.addPassphrase(opener.passphrase);
  return d;
}

/** Why an age file did not open, in words naming what was tried. */
function cannotDecrypt(file: string, opener: BackupOpener, err: unknown): BackupFailure {
  const said = (err as Error)?.message ?? String(err);
  if (/no identity matched/.test(said)) {
    const identity = opener.identityFile === null ? null : `the identity in ${opener.identityFile}`;
    const passphrase = opener.passphraseFile === null ? null : `the passphrase in ${opener.passphraseFile}`;
    const why =
      identity !== null && passphrase !== null
        ? 'wrong identity and wrong passphrase'
        : identity !== null
          ? 'wrong identity (it is none of the recipients this backup was encrypted to)'
          : 'wrong passphrase';
    return new BackupFailure({
      file,
      cause: `does not decrypt with ${[identity, passphrase].filter((x) => x !== null).join(' or ')}: ${why}`,
    });
  }
  return new BackupFailure({ file, cause: `does not decrypt: ${said} (damaged, cut short or not an age file)` });
}

/** Decrypts an age file into memory (small files: the manifest, the key). */
export async function decryptToBytes(file: string, opener: BackupOpener): Promise<Uint8Array> {
  const bytes = await naming(file, () => readFile(file));
  try {
    return await decrypter(opener).decrypt(new Uint8Array(bytes));
  } catch (err) {
    throw cannotDecrypt(file, opener, err);
  }
}

/** Decrypts an age file into a new file `target`, streamed; a damaged or truncated source fails naming `file`. */
export async function decryptToFile(
  file: string,
  target: string,
  opener: BackupOpener,
): Promise<{ sha256: string; size: number }> {
  const input = Readable.toWeb(createReadStream(file, { highWaterMark: 1 << 20 })) as ReadableStream<Uint8Array>;
  let out;
  try {
    out = await decrypter(opener).decrypt(input);
  } catch (err) {
    if ((err as NodeJS.ErrnoException)?.code !== undefined) throw new BackupFailure({ file, cause: causeOf(err) });
    throw cannotDecrypt(file, opener, err);
  }
  try {
    return await writeStream(
      target,
      Readable.fromWeb(out as unknown as import('node:stream/web').ReadableStream<Uint8Array>),
    );
  } catch (err) {
    if ((err as NodeJS.ErrnoException)?.code !== undefined)
      throw new BackupFailure({ file: target, cause: causeOf(err) });
    throw cannotDecrypt(file, opener, err);
  }
}
