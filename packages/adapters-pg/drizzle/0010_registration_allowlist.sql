CREATE TABLE "registration_allowlist" (
	"entry" text PRIMARY KEY NOT NULL,
	"added_at" bigint NOT NULL
);
