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
