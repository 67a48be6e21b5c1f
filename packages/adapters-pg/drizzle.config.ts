import { defineConfig } from 'drizzle-kit';

// Generates forward-only PostgreSQL migrations into ./drizzle from every file under src/schema.
// Paths are relative to the repository root, where `npm run db:generate` runs.
export default defineConfig({
  dialect: 'postgresql',
  schema: './packages/adapters-pg/src/schema',
  out: './packages/adapters-pg/drizzle',
});
