CREATE TABLE "handles" (
	"account_id" text PRIMARY KEY NOT NULL,
	"user_name" text NOT NULL,
	"published" boolean DEFAULT false NOT NULL,
	"claimed_at" bigint NOT NULL,
	CONSTRAINT "handles_user_name_unique" UNIQUE("user_name")
);
--> statement-breakpoint
CREATE TABLE "minted_capabilities" (
	"jti" text PRIMARY KEY NOT NULL,
	"peer" text NOT NULL,
	"issued_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL,
	"revoked_at" bigint
);
--> statement-breakpoint
CREATE TABLE "peer_buckets" (
	"peer" text PRIMARY KEY NOT NULL,
	"level" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "handles" ADD CONSTRAINT "handles_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "minted_capabilities_peer_idx" ON "minted_capabilities" USING btree ("peer","expires_at");--> statement-breakpoint
CREATE INDEX "minted_capabilities_revoked_idx" ON "minted_capabilities" USING btree ("revoked_at");