CREATE TABLE `attestation_history` (
	`seq` integer PRIMARY KEY NOT NULL,
	`kid` text NOT NULL,
	`public_key` text NOT NULL,
	`added_at` integer NOT NULL,
	`prev` text NOT NULL,
	`hash` text NOT NULL,
	`sig` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `attestation_history_kid_unique` ON `attestation_history` (`kid`);--> statement-breakpoint
CREATE UNIQUE INDEX `attestation_history_hash_unique` ON `attestation_history` (`hash`);--> statement-breakpoint
CREATE TABLE `attestation_keys` (
	`kid` text PRIMARY KEY NOT NULL,
	`private_key` text NOT NULL,
	`public_key` text NOT NULL,
	`created_at` integer NOT NULL,
	`retired_at` integer
);
--> statement-breakpoint
CREATE TABLE `deprecations` (
	`min_protocol_version` text NOT NULL,
	`effective_at` integer NOT NULL,
	`announced_at` integer NOT NULL,
	PRIMARY KEY(`min_protocol_version`, `effective_at`)
);
