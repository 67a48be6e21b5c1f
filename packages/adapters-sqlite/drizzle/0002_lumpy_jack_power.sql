CREATE TABLE `album_upgrade_intents` (
	`intent_id` text PRIMARY KEY NOT NULL,
	`album_id` text NOT NULL,
	`from_version` text NOT NULL,
	`to_version` text NOT NULL,
	`proposer_device` text NOT NULL,
	`deadline_s` integer NOT NULL,
	`received_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`intent_cbor` blob NOT NULL,
	FOREIGN KEY (`album_id`) REFERENCES `albums`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `album_upgrade_intents_album_idx` ON `album_upgrade_intents` (`album_id`);--> statement-breakpoint
CREATE TABLE `albums` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`protocol_version` text NOT NULL,
	`created_at` integer NOT NULL,
	`upgrade_pending_to` text,
	`intent_id` text,
	`upgrade_received_at` integer,
	`upgrade_expires_at` integer,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `albums_account_idx` ON `albums` (`account_id`);--> statement-breakpoint
CREATE TABLE `device_directories` (
	`account_id` text PRIMARY KEY NOT NULL,
	`identity_key` blob NOT NULL,
	`seq` integer NOT NULL,
	`body` blob NOT NULL,
	`accepted_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `directory_devices` (
	`account_id` text NOT NULL,
	`device_id` text NOT NULL,
	`position` integer NOT NULL,
	`ed25519` blob NOT NULL,
	`mldsa65` blob NOT NULL,
	`added_at` integer NOT NULL,
	PRIMARY KEY(`account_id`, `device_id`),
	FOREIGN KEY (`account_id`) REFERENCES `device_directories`(`account_id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `revoke_all_challenges` (
	`challenge_hash` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`expires_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `revoke_all_challenges_expires_idx` ON `revoke_all_challenges` (`expires_at`);--> statement-breakpoint
CREATE TABLE `totp_challenges` (
	`id_hash` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`expires_at` integer NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `totp_challenges_expires_idx` ON `totp_challenges` (`expires_at`);--> statement-breakpoint
CREATE TABLE `totp_enrollments` (
	`account_id` text PRIMARY KEY NOT NULL,
	`state` text NOT NULL,
	`sealed_secret` text NOT NULL,
	`highest_used_step` integer,
	`created_at` integer NOT NULL,
	`confirmed_at` integer,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action,
	CONSTRAINT "totp_enrollments_state_check" CHECK("totp_enrollments"."state" in ('pending', 'confirmed'))
);
