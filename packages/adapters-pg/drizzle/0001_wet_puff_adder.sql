CREATE TABLE "totp_challenges" (
	"id_hash" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"expires_at" bigint NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "totp_enrollments" (
	"account_id" text PRIMARY KEY NOT NULL,
	"state" text NOT NULL,
	"sealed_secret" text NOT NULL,
	"highest_used_step" bigint,
	"created_at" bigint NOT NULL,
	"confirmed_at" bigint,
	CONSTRAINT "totp_enrollments_state_check" CHECK ("totp_enrollments"."state" in ('pending', 'confirmed'))
);
--> statement-breakpoint
ALTER TABLE "totp_challenges" ADD CONSTRAINT "totp_challenges_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "totp_enrollments" ADD CONSTRAINT "totp_enrollments_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "totp_challenges_expires_idx" ON "totp_challenges" USING btree ("expires_at");