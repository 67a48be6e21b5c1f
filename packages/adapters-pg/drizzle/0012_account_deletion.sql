ALTER TABLE "accounts" ADD COLUMN "deleted_at" bigint;--> statement-breakpoint
ALTER TABLE "handles" ADD COLUMN "retired_at" bigint;--> statement-breakpoint
ALTER TABLE "minted_capabilities" ADD COLUMN "account_id" text;--> statement-breakpoint
CREATE INDEX "minted_capabilities_account_idx" ON "minted_capabilities" USING btree ("account_id");