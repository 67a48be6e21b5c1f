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
ALTER TABLE "device_cohorts" ADD CONSTRAINT "device_cohorts_user_id_accounts_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "sessions_account_idx" ON "sessions" USING btree ("account_id");