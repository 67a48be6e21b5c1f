CREATE TABLE `accounts` (
	`id` text PRIMARY KEY NOT NULL,
	`address` text NOT NULL,
	`address_key` text NOT NULL,
	`password_hash` text,
	`display_name` text,
	`created_at` integer NOT NULL,
	`locked_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `accounts_address_key_unique` ON `accounts` (`address_key`);--> statement-breakpoint
CREATE TABLE `device_cohorts` (
	`user_id` text NOT NULL,
	`cohort_hash` text NOT NULL,
	`first_seen` integer NOT NULL,
	`last_seen` integer NOT NULL,
	PRIMARY KEY(`user_id`, `cohort_hash`),
	FOREIGN KEY (`user_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`token_hash` text NOT NULL,
	`cohort_hash` text,
	`created_at` integer NOT NULL,
	`refreshed_at` integer NOT NULL,
	`last_used_at` integer NOT NULL,
	`access_floor` integer NOT NULL,
	`closed_at` integer,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `sessions_token_hash_unique` ON `sessions` (`token_hash`);--> statement-breakpoint
CREATE INDEX `sessions_account_idx` ON `sessions` (`account_id`);--> statement-breakpoint
CREATE TABLE `signing_keys` (
	`kid` text PRIMARY KEY NOT NULL,
	`private_key` text NOT NULL,
	`public_key` text NOT NULL,
	`created_at` integer NOT NULL,
	`retired_at` integer
);
