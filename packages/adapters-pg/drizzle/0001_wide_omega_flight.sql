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
CREATE TABLE "identity_links" (
	"issuer" text NOT NULL,
	"subject" text NOT NULL,
	"account_id" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "identity_links_issuer_subject_pk" PRIMARY KEY("issuer","subject")
);
--> statement-breakpoint
CREATE TABLE "oidc_flows" (
	"state_hash" text PRIMARY KEY NOT NULL,
	"purpose" text NOT NULL,
	"initiator" text,
	"return_to" text NOT NULL,
	"app_challenge" text,
	"sealed_verifier" text NOT NULL,
	"created_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "oidc_login_codes" (
	"code_hash" text PRIMARY KEY NOT NULL,
	"purpose" text NOT NULL,
	"account_id" text NOT NULL,
	"app_challenge" text,
	"issuer" text,
	"subject" text,
	"authenticated_at" bigint NOT NULL,
	"created_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "attestation_history" (
	"seq" integer PRIMARY KEY NOT NULL,
	"kid" text NOT NULL,
	"public_key" text NOT NULL,
	"added_at" bigint NOT NULL,
	"prev" text NOT NULL,
	"hash" text NOT NULL,
	"sig" text NOT NULL,
	CONSTRAINT "attestation_history_kid_unique" UNIQUE("kid"),
	CONSTRAINT "attestation_history_hash_unique" UNIQUE("hash")
);
--> statement-breakpoint
CREATE TABLE "attestation_keys" (
	"kid" text PRIMARY KEY NOT NULL,
	"private_key" text NOT NULL,
	"public_key" text NOT NULL,
	"created_at" bigint NOT NULL,
	"retired_at" bigint
);
--> statement-breakpoint
CREATE TABLE "deprecations" (
	"min_protocol_version" text NOT NULL,
	"effective_at" bigint NOT NULL,
	"announced_at" bigint NOT NULL,
	CONSTRAINT "deprecations_min_protocol_version_effective_at_pk" PRIMARY KEY("min_protocol_version","effective_at")
);
--> statement-breakpoint
ALTER TABLE "accounts" ALTER COLUMN "address" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "accounts" ALTER COLUMN "address_key" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "method" text DEFAULT 'password' NOT NULL;--> statement-breakpoint
ALTER TABLE "totp_throttles" ADD CONSTRAINT "totp_throttles_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "identity_links" ADD CONSTRAINT "identity_links_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oidc_flows" ADD CONSTRAINT "oidc_flows_initiator_accounts_id_fk" FOREIGN KEY ("initiator") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oidc_login_codes" ADD CONSTRAINT "oidc_login_codes_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "identity_links_account_idx" ON "identity_links" USING btree ("account_id");--> statement-breakpoint
CREATE INDEX "oidc_flows_expires_idx" ON "oidc_flows" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "oidc_login_codes_expires_idx" ON "oidc_login_codes" USING btree ("expires_at");