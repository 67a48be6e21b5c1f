DROP INDEX "upload_sessions_payer_idx";--> statement-breakpoint
DROP INDEX "upload_sessions_album_idx";--> statement-breakpoint
CREATE INDEX "upload_sessions_album_idx" ON "upload_sessions" USING btree ("album_id") WHERE album_id IS NOT NULL;