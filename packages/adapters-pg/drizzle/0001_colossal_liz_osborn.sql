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
CREATE TABLE "federated_intakes" (
	"id" text PRIMARY KEY NOT NULL,
	"uploader_id" text NOT NULL,
	"receiver_id" text NOT NULL,
	"peer" text NOT NULL,
	"declared_size" bigint NOT NULL,
	"content_hash" text NOT NULL,
	"state" text NOT NULL,
	"received_size" bigint,
	"created_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "link_drops" (
	"upload_id" text PRIMARY KEY NOT NULL,
	"link_id" text NOT NULL,
	"owner_id" text NOT NULL,
	"token_hash" text NOT NULL,
	"declared_size" bigint NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "links" (
	"id" text PRIMARY KEY NOT NULL,
	"owner_id" text NOT NULL,
	"kind" text NOT NULL,
	"album_id" text,
	"asset_ids" text NOT NULL,
	"wrapped_key" text,
	"seal_key" text,
	"max_bytes" bigint,
	"accepted_bytes" bigint DEFAULT 0 NOT NULL,
	"created_at" bigint NOT NULL,
	"expires_at" bigint,
	"revoked_at" bigint
);
--> statement-breakpoint
CREATE TABLE "sponsored_accounts" (
	"account_id" text PRIMARY KEY NOT NULL,
	"sponsor_id" text NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sponsored_owners" (
	"account_id" text NOT NULL,
	"owner_id" text NOT NULL,
	"seq" integer NOT NULL,
	CONSTRAINT "sponsored_owners_account_id_owner_id_pk" PRIMARY KEY("account_id","owner_id")
);
--> statement-breakpoint
ALTER TABLE "accounts" ALTER COLUMN "address" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "accounts" ALTER COLUMN "address_key" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "method" text DEFAULT 'password' NOT NULL;--> statement-breakpoint
ALTER TABLE "handles" ADD CONSTRAINT "handles_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "totp_throttles" ADD CONSTRAINT "totp_throttles_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "identity_links" ADD CONSTRAINT "identity_links_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oidc_flows" ADD CONSTRAINT "oidc_flows_initiator_accounts_id_fk" FOREIGN KEY ("initiator") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oidc_login_codes" ADD CONSTRAINT "oidc_login_codes_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "link_drops" ADD CONSTRAINT "link_drops_link_id_links_id_fk" FOREIGN KEY ("link_id") REFERENCES "public"."links"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sponsored_owners" ADD CONSTRAINT "sponsored_owners_account_id_sponsored_accounts_account_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."sponsored_accounts"("account_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "minted_capabilities_peer_idx" ON "minted_capabilities" USING btree ("peer","expires_at");--> statement-breakpoint
CREATE INDEX "minted_capabilities_revoked_idx" ON "minted_capabilities" USING btree ("revoked_at");--> statement-breakpoint
CREATE INDEX "identity_links_account_idx" ON "identity_links" USING btree ("account_id");--> statement-breakpoint
CREATE INDEX "oidc_flows_expires_idx" ON "oidc_flows" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "oidc_login_codes_expires_idx" ON "oidc_login_codes" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "federated_intakes_budget_idx" ON "federated_intakes" USING btree ("receiver_id","peer","state");--> statement-breakpoint
CREATE INDEX "link_drops_link_idx" ON "link_drops" USING btree ("link_id");--> statement-breakpoint
CREATE INDEX "links_owner_idx" ON "links" USING btree ("owner_id");--> statement-breakpoint
CREATE INDEX "sponsored_accounts_sponsor_idx" ON "sponsored_accounts" USING btree ("sponsor_id");--> statement-breakpoint
CREATE INDEX "sponsored_owners_owner_idx" ON "sponsored_owners" USING btree ("owner_id");--> statement-breakpoint
CREATE INDEX "upload_sessions_open_payer_idx" ON "upload_sessions" USING btree ("payer_id","expires_at") WHERE state IN ('Pending', 'Uploading', 'WaitingForProcessing');