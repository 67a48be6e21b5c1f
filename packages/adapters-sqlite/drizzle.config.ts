import { defineConfig } from 'drizzle-kit';

// Generates forward-only SQLite migrations into ./drizzle from every file under src/schema.
export default defineConfig({
  dialect: 'sqlite',
  schema: './packages/adapters-sqlite/src/schema',
  out: './packages/adapters-sqlite/drizzle',
});
