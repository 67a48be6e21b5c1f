ALTER TABLE `upload_sessions` RENAME COLUMN "drop_link_id" TO "drop_link_id_hash";--> statement-breakpoint
CREATE INDEX `upload_sessions_drop_link_idx` ON `upload_sessions` (`drop_link_id_hash`) WHERE drop_link_id_hash IS NOT NULL;--> statement-breakpoint
-- Renamed in place, not rebuilt: SQLite points link_drops' foreign key at the renamed column, and
-- link_drops_link_idx follows link_id_hash.
ALTER TABLE `links` RENAME COLUMN "id" TO "id_hash";--> statement-breakpoint
ALTER TABLE `link_drops` RENAME COLUMN "link_id" TO "link_id_hash";--> statement-breakpoint
-- Rows written before this migration keep their clear id in id_hash, and no sealed_id, until the
-- first start of this build moves each to its hash (core's sealClearLinkIds).
ALTER TABLE `links` ADD `sealed_id` text;
