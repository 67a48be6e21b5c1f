/**
 * The backup's manifest: one `sha256sum`-style line per file written (`<64 hex>  <relative path>`),
 * so an operator can check a copy with `sha256sum -c MANIFEST.sha256` without this server, and
 * `verify-backup` and `restore` read it with these functions. Building, parsing and comparing are
 * pure; hashing the files is the caller's I/O.
 */

/** The manifest's file name inside a backup directory. */
export const MANIFEST_FILE = 'MANIFEST.sha256';

/** One file of a backup: where it is, relative to the backup directory, and its SHA-256. */
export interface ManifestEntry {
  readonly path: string;
  readonly sha256: string;
}

/** What is wrong with a backup: the file (relative to the backup directory) and why, in one line. */
export interface BackupProblem {
  readonly file: string;
  readonly cause: string;
}

/** The one line a failing command prints. */
export function describeBackupProblem(p: BackupProblem): string {
  return `${p.file}: ${p.cause}`;
}

const HEX64 = /^[0-9a-f]{64}$/;

/**
 * A path a backup may hold: relative, `/`-separated, no empty, `.` or `..` segment, no backslash or
 * control character. Everything a manifest names is opened under the backup (and, by restore, the
 * data) directory, so a manifest must not be able to point outside them.
 */
export function isSafeBackupPath(path: string): boolean {
  if (path === '' || path.startsWith('/') || path.includes('\\') || /\p{Cc}/u.test(path)) return false;
  return path.split('/').every((seg) => seg !== '' && seg !== '.' && seg !== '..');
}

/** The manifest text: entries sorted by path, one per line, newline-terminated. */
export function formatManifest(entries: readonly ManifestEntry[]): string {
  const sorted = [...entries].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  for (let i = 0; i < sorted.length; i++) {
    const e = sorted[i]!;
    if (!HEX64.test(e.sha256)) throw new RangeError(`not a SHA-256: ${e.sha256}`);
    if (!isSafeBackupPath(e.path)) throw new RangeError(`not a backup path: ${e.path}`);
    if (i > 0 && sorted[i - 1]!.path === e.path) throw new RangeError(`listed twice: ${e.path}`);
  }
  return sorted.map((e) => `${e.sha256}  ${e.path}\n`).join('');
}

/** The entries of a manifest, or the problem with its first bad line. */
export function parseManifest(
  text: string,
): { ok: true; entries: ManifestEntry[] } | { ok: false; problem: BackupProblem } {
  const entries: ManifestEntry[] = [];
  const seen = new Set<string>();
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  for (let i = 0; i < lines.length; i++) {
    const m = /^([0-9a-f]{64}) {2}(.+)$/.exec(lines[i]!);
    const bad = (cause: string) => ({
      ok: false as const,
      problem: { file: MANIFEST_FILE, cause: `line ${i + 1} ${cause}` },
    });
    if (!m) return bad('is not "<sha256>  <path>"');
    const path = m[2]!;
    if (!isSafeBackupPath(path)) return bad(`names a path outside the backup (${JSON.stringify(path)})`);
    if (seen.has(path)) return bad(`lists ${path} a second time`);
    seen.add(path);
    entries.push({ path, sha256: m[1]! });
  }
  if (entries.length === 0)
    return { ok: false, problem: { file: MANIFEST_FILE, cause: 'is empty (the backup did not finish)' } };
  return { ok: true, entries };
}

/**
 * Compares the manifest with what is on disk: `observed(path)` is the file's SHA-256, or null when
 * it is missing. The first difference, in manifest order, or null when every file matches.
 */
export function checkManifest(
  entries: readonly ManifestEntry[],
  observed: (path: string) => string | null,
): BackupProblem | null {
  for (const e of entries) {
    const actual = observed(e.path);
    if (actual === null) return { file: e.path, cause: 'is listed in the manifest but missing' };
    if (actual !== e.sha256)
      return {
        file: e.path,
        cause: `SHA-256 is ${actual}, the manifest says ${e.sha256} (changed or damaged after the backup)`,
      };
  }
  return null;
}
