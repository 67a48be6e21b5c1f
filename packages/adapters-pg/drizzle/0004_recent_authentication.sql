ALTER TABLE "accounts" ADD COLUMN "credentials_changed_at" bigint;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "authenticated_at" bigint DEFAULT 0 NOT NULL;