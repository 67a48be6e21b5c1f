/**
 * The part of a better-sqlite3 connection the read batch and the group commit use. Declared here
 * so this package needs no driver; a `Database` from better-sqlite3 is one.
 */
export interface SqliteConnection {
  readonly name: string;
  readonly memory: boolean;
  readonly readonly: boolean;
  readonly inTransaction: boolean;
  prepare(source: string): { run(): unknown };
  exec(source: string): unknown;
  pragma(source: string, options?: { simple?: boolean }): unknown;
  transaction(fn: () => unknown): () => unknown;
}
