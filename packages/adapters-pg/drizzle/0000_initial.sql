CREATE TABLE "accounts" (
	"id" text PRIMARY KEY NOT NULL,
	"address" text NOT NULL,
	"address_key" text NOT NULL,
	"password_hash" text,
	"display_name" text,
	"created_at" bigint NOT NULL,
	"locked_at" bigint,
	CONSTRAINT "accounts_address_key_unique" UNIQUE("address_key")
);
--> statement-breakpoint
CREATE TABLE "device_cohorts" (
	"user_id" text NOT NULL,
	"cohort_hash" text NOT NULL,
	"first_seen" bigint NOT NULL,
	"last_seen" bigint NOT NULL,
	CONSTRAINT "device_cohorts_user_id_cohort_hash_pk" PRIMARY KEY("user_id","cohort_hash")
);
--> statement-breakpoint
CREATE TABLE "sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"token_hash" text NOT NULL,
	"cohort_hash" text,
	"created_at" bigint NOT NULL,
	"refreshed_at" bigint NOT NULL,
	"last_used_at" bigint NOT NULL,
	"access_floor" bigint NOT NULL,
	"closed_at" bigint,
	CONSTRAINT "sessions_token_hash_unique" UNIQUE("token_hash")
);
--> statement-breakpoint
CREATE TABLE "signing_keys" (
	"kid" text PRIMARY KEY NOT NULL,
	"private_key" text NOT NULL,
	"public_key" text NOT NULL,
	"created_at" bigint NOT NULL,
	"retired_at" bigint
);
--> statement-breakpoint
CREATE TABLE "album_upgrade_intents" (
	"intent_id" text PRIMARY KEY NOT NULL,
	"album_id" text NOT NULL,
	"from_version" text NOT NULL,
	"to_version" text NOT NULL,
	"proposer_device" text NOT NULL,
	"deadline_s" bigint NOT NULL,
	"received_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL,
	"intent_cbor" "bytea" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "albums" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"protocol_version" text NOT NULL,
	"created_at" bigint NOT NULL,
	"upgrade_pending_to" text,
	"intent_id" text,
	"upgrade_received_at" bigint,
	"upgrade_expires_at" bigint
);
--> statement-breakpoint
CREATE TABLE "device_directories" (
	"account_id" text PRIMARY KEY NOT NULL,
	"identity_key" "bytea" NOT NULL,
	"seq" bigint NOT NULL,
	"body" "bytea" NOT NULL,
	"accepted_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "directory_devices" (
	"account_id" text NOT NULL,
	"device_id" text NOT NULL,
	"position" integer NOT NULL,
	"ed25519" "bytea" NOT NULL,
	"mldsa65" "bytea" NOT NULL,
	"added_at" bigint NOT NULL,
	CONSTRAINT "directory_devices_account_id_device_id_pk" PRIMARY KEY("account_id","device_id")
);
--> statement-breakpoint
CREATE TABLE "revoke_all_challenges" (
	"challenge_hash" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
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
CREATE TABLE "asset_blobs" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"asset_id" text NOT NULL,
	"kind" text NOT NULL,
	"content_hash" text NOT NULL,
	"size" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "assets" (
	"id" text PRIMARY KEY NOT NULL,
	"owner_id" text NOT NULL,
	"uploader_id" text NOT NULL,
	"state" text NOT NULL,
	"created_at" bigint NOT NULL,
	"trashed_at" bigint,
	"drop_expires_at" bigint
);
--> statement-breakpoint
CREATE TABLE "blobs" (
	"content_hash" text PRIMARY KEY NOT NULL,
	"size" bigint NOT NULL,
	"charged_to" text NOT NULL,
	"peer" text,
	"stored_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "federated_refs" (
	"receiver" text NOT NULL,
	"peer" text NOT NULL,
	"content_hash" text NOT NULL,
	CONSTRAINT "federated_refs_receiver_peer_content_hash_pk" PRIMARY KEY("receiver","peer","content_hash")
);
--> statement-breakpoint
CREATE TABLE "quota_accounts" (
	"account_id" text PRIMARY KEY NOT NULL,
	"charged" bigint DEFAULT 0 NOT NULL,
	"reserved" bigint DEFAULT 0 NOT NULL,
	"custom_limits" integer DEFAULT 0 NOT NULL,
	"soft_limit" bigint,
	"hard_limit" bigint,
	"hard_since" bigint,
	"suspended_at" bigint,
	"sponsor_id" text
);
--> statement-breakpoint
CREATE TABLE "upload_sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"uploader_id" text NOT NULL,
	"payer_id" text NOT NULL,
	"kind" text NOT NULL,
	"declared_size" bigint NOT NULL,
	"content_hash" text,
	"album_id" text,
	"intent_id" text,
	"drop_link_id" text,
	"state" text NOT NULL,
	"received_size" bigint,
	"received_hash" text,
	"asset_id" text,
	"created_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "device_cohorts" ADD CONSTRAINT "device_cohorts_user_id_accounts_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "album_upgrade_intents" ADD CONSTRAINT "album_upgrade_intents_album_id_albums_id_fk" FOREIGN KEY ("album_id") REFERENCES "public"."albums"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "albums" ADD CONSTRAINT "albums_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "device_directories" ADD CONSTRAINT "device_directories_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "directory_devices" ADD CONSTRAINT "directory_devices_account_id_device_directories_account_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."device_directories"("account_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "revoke_all_challenges" ADD CONSTRAINT "revoke_all_challenges_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "totp_challenges" ADD CONSTRAINT "totp_challenges_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "totp_enrollments" ADD CONSTRAINT "totp_enrollments_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "asset_blobs" ADD CONSTRAINT "asset_blobs_asset_id_assets_id_fk" FOREIGN KEY ("asset_id") REFERENCES "public"."assets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "sessions_account_idx" ON "sessions" USING btree ("account_id");--> statement-breakpoint
CREATE INDEX "album_upgrade_intents_album_idx" ON "album_upgrade_intents" USING btree ("album_id");--> statement-breakpoint
CREATE INDEX "albums_account_idx" ON "albums" USING btree ("account_id");--> statement-breakpoint
CREATE INDEX "revoke_all_challenges_expires_idx" ON "revoke_all_challenges" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "totp_challenges_expires_idx" ON "totp_challenges" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "asset_blobs_asset_idx" ON "asset_blobs" USING btree ("asset_id");--> statement-breakpoint
CREATE INDEX "asset_blobs_hash_idx" ON "asset_blobs" USING btree ("content_hash");--> statement-breakpoint
CREATE INDEX "assets_owner_idx" ON "assets" USING btree ("owner_id","state");--> statement-breakpoint
CREATE INDEX "assets_drop_idx" ON "assets" USING btree ("drop_expires_at");--> statement-breakpoint
CREATE INDEX "blobs_charged_to_idx" ON "blobs" USING btree ("charged_to","peer");--> statement-breakpoint
CREATE INDEX "federated_refs_hash_idx" ON "federated_refs" USING btree ("content_hash");--> statement-breakpoint
CREATE INDEX "upload_sessions_payer_idx" ON "upload_sessions" USING btree ("payer_id","expires_at");--> statement-breakpoint
CREATE INDEX "upload_sessions_album_idx" ON "upload_sessions" USING btree ("album_id");--> statement-breakpoint
CREATE INDEX "upload_sessions_expiry_idx" ON "upload_sessions" USING btree ("expires_at");