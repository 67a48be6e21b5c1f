export { migrateCatalog, planCatalogMigration } from './migrator.js';
