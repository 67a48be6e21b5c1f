CREATE TABLE "sign_in_counts" (
	"key" text PRIMARY KEY NOT NULL,
	"state" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sign_in_tickets" (
	"ticket_hash" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"issued_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL,
	"credentials_at" bigint,
	"wrong_passwords" integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE "sign_in_tickets" ADD CONSTRAINT "sign_in_tickets_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "sign_in_tickets_account" ON "sign_in_tickets" USING btree ("account_id");