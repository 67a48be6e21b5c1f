CREATE TABLE `deployment` (
	`id` integer PRIMARY KEY NOT NULL,
	`key_fingerprint` text NOT NULL,
	`issuer` text NOT NULL,
	`issuer_configured` integer NOT NULL,
	`recorded_at` integer NOT NULL,
	CONSTRAINT "deployment_single_row" CHECK("deployment"."id" = 1)
);
--> statement-breakpoint
CREATE TABLE `totp_throttles` (
	`account_id` text PRIMARY KEY NOT NULL,
	`wrong_codes_at` text NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
