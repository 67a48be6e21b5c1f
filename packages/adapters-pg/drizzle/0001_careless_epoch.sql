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
ALTER TABLE "link_drops" ADD CONSTRAINT "link_drops_link_id_links_id_fk" FOREIGN KEY ("link_id") REFERENCES "public"."links"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sponsored_owners" ADD CONSTRAINT "sponsored_owners_account_id_sponsored_accounts_account_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."sponsored_accounts"("account_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "federated_intakes_budget_idx" ON "federated_intakes" USING btree ("receiver_id","peer","state");--> statement-breakpoint
CREATE INDEX "link_drops_link_idx" ON "link_drops" USING btree ("link_id");--> statement-breakpoint
CREATE INDEX "links_owner_idx" ON "links" USING btree ("owner_id");--> statement-breakpoint
CREATE INDEX "sponsored_accounts_sponsor_idx" ON "sponsored_accounts" USING btree ("sponsor_id");--> statement-breakpoint
CREATE INDEX "sponsored_owners_owner_idx" ON "sponsored_owners" USING btree ("owner_id");