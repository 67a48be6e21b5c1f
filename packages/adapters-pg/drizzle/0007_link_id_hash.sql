ALTER TABLE "upload_sessions" RENAME COLUMN "drop_link_id" TO "drop_link_id_hash";--> statement-breakpoint
CREATE INDEX "upload_sessions_drop_link_idx" ON "upload_sessions" USING btree ("drop_link_id_hash") WHERE drop_link_id_hash IS NOT NULL;--> statement-breakpoint
-- Renamed in place: the foreign key and link_drops_link_idx follow the renamed columns (only the
-- constraint's name is brought in line with the schema's).
ALTER TABLE "links" RENAME COLUMN "id" TO "id_hash";--> statement-breakpoint
ALTER TABLE "link_drops" RENAME COLUMN "link_id" TO "link_id_hash";--> statement-breakpoint
ALTER TABLE "link_drops" RENAME CONSTRAINT "link_drops_link_id_links_id_fk" TO "link_drops_link_id_hash_links_id_hash_fk";--> statement-breakpoint
-- Rows written before this migration keep their clear id in id_hash, and no sealed_id, until the
-- first start of this build moves each to its hash (core's sealClearLinkIds).
ALTER TABLE "links" ADD COLUMN "sealed_id" text;
