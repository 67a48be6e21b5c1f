// drizzle-kit reads one dialect per config: DRIZZLE_DIALECT=pg picks the PostgreSQL adapter's.
// `npm run db:generate` runs both package configs.
import pg from './packages/adapters-pg/drizzle.config.js';
import sqlite from './packages/adapters-sqlite/drizzle.config.js';

export default process.env.DRIZZLE_DIALECT === 'pg' ? pg : sqlite;
