CREATE TABLE "deployment" (
	"id" integer PRIMARY KEY NOT NULL,
	"key_fingerprint" text NOT NULL,
	"issuer" text NOT NULL,
	"issuer_configured" boolean NOT NULL,
	"recorded_at" bigint NOT NULL,
	CONSTRAINT "deployment_single_row" CHECK ("deployment"."id" = 1)
);
--> statement-breakpoint
CREATE TABLE "totp_throttles" (
	"account_id" text PRIMARY KEY NOT NULL,
	"wrong_codes_at" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "totp_throttles" ADD CONSTRAINT "totp_throttles_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;