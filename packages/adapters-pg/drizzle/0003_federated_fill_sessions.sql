DROP TABLE "federated_intakes" CASCADE;--> statement-breakpoint
ALTER TABLE "upload_sessions" ADD COLUMN "source_peer" text;