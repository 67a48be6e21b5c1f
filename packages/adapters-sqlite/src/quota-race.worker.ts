// One competitor in the reservation race: its own process, its own connection.
import { openSqliteDatabase } from './migrate.js';
import { SqliteQuotaStore } from './quota-store.js';

const { file, payer, count, declared, hard, prefix } = JSON.parse(process.argv[2]!) as {
  file: string;
  payer: string;
  count: number;
  declared: number;
  hard: number;
  prefix: string;
};
const db = openSqliteDatabase(file);
const store = new SqliteQuotaStore(db);
const outcomes: string[] = [];
for (let i = 0; i < count; i++) {
  const id = `${prefix}-${i}`;
  const r = await store.openUpload(
    {
      id,
      uploaderId: payer,
      kind: 'original',
      declaredSize: declared,
      contentHash: null,
      albumId: null,
      intentId: null,
      dropLinkIdHash: null,
      sourcePeer: null,
      createdAt: 1,
      expiresAt: 1e15,
    },
    {
      defaults: { soft: null, hard },
      graceMs: 1_000,
      federatedShare: 0.25,
      maxOpenUploads: 1000,
      followUpMs: 900_000,
      followUpOverdraft: 16_777_216,
    },
    1_000,
  );
  outcomes.push(r.ok ? 'reserved' : r.code === 'error.quota.exceeded' ? 'exceeded' : r.code);
}
db.close();
process.stdout.write(JSON.stringify(outcomes));
