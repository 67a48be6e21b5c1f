/**
 * Loaded into a bench server with `--import` (NODE_OPTIONS) when BENCH_SQL_TRACE names a file:
 * every statement the server's stores execute, with the values bound to it, is appended to that
 * file as one JSON line. The growth mode reads the statements of each hot request from it, so the
 * plans it prints are of the SQL the adapters run, not of a copy that could drift from them.
 * Plain JavaScript: it loads before tsx does. Bench only: the trace holds hashes and keys.
 */
import { appendFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import pg from 'pg';

const file = process.env.BENCH_SQL_TRACE;
if (file) {
  const record = (store, sql, values) => {
    const plain = (v) =>
      Buffer.isBuffer(v) || v instanceof Uint8Array
        ? { bytes: Buffer.from(v).toString('hex') }
        : typeof v === 'bigint'
          ? Number(v)
          : v;
    const bound = Array.isArray(values)
      ? values.map(plain)
      : values && typeof values === 'object'
        ? Object.fromEntries(Object.entries(values).map(([k, v]) => [k, plain(v)]))
        : [];
    appendFileSync(file, `${JSON.stringify({ store, sql, values: bound })}\n`);
  };

  // better-sqlite3: every statement shares one prototype; its executing methods are wrapped once.
  const probe = new Database(':memory:');
  const statement = Object.getPrototypeOf(probe.prepare('SELECT 1'));
  probe.close();
  for (const method of ['run', 'get', 'all', 'iterate']) {
    const original = statement[method];
    statement[method] = function (...args) {
      // Positional values, or one object of named ones (as better-sqlite3 takes them).
      const values =
        args.length === 1 &&
        args[0] !== null &&
        typeof args[0] === 'object' &&
        !Array.isArray(args[0]) &&
        !Buffer.isBuffer(args[0])
          ? args[0]
          : args;
      record('sqlite', this.source, values);
      return original.apply(this, args);
    };
  }

  // node-postgres: every query, pooled or not, named or not, goes through Client#query.
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (config, values, callback) {
    const text = typeof config === 'string' ? config : config?.text;
    if (typeof text === 'string') record('postgresql', text, (Array.isArray(values) ? values : config?.values) ?? []);
    return query.call(this, config, values, callback);
  };
}
