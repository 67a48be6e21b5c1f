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
--> statement-breakpoint
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
--> statement-breakpoint
CREATE TABLE `asset_blobs` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`asset_id` text NOT NULL,
	`kind` text NOT NULL,
	`content_hash` text NOT NULL,
	`size` integer NOT NULL,
	FOREIGN KEY (`asset_id`) REFERENCES `assets`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `asset_blobs_asset_idx` ON `asset_blobs` (`asset_id`);--> statement-breakpoint
CREATE INDEX `asset_blobs_hash_idx` ON `asset_blobs` (`content_hash`);--> statement-breakpoint
CREATE TABLE `assets` (
	`id` text PRIMARY KEY NOT NULL,
	`owner_id` text NOT NULL,
	`uploader_id` text NOT NULL,
	`state` text NOT NULL,
	`created_at` integer NOT NULL,
	`trashed_at` integer,
	`drop_expires_at` integer
);
--> statement-breakpoint
CREATE INDEX `assets_owner_idx` ON `assets` (`owner_id`,`state`);--> statement-breakpoint
CREATE INDEX `assets_drop_idx` ON `assets` (`drop_expires_at`);--> statement-breakpoint
CREATE TABLE `blobs` (
	`content_hash` text PRIMARY KEY NOT NULL,
	`size` integer NOT NULL,
	`charged_to` text NOT NULL,
	`peer` text,
	`stored_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `blobs_charged_to_idx` ON `blobs` (`charged_to`,`peer`);--> statement-breakpoint
CREATE TABLE `federated_refs` (
	`receiver` text NOT NULL,
	`peer` text NOT NULL,
	`content_hash` text NOT NULL,
	PRIMARY KEY(`receiver`, `peer`, `content_hash`)
);
--> statement-breakpoint
CREATE INDEX `federated_refs_hash_idx` ON `federated_refs` (`content_hash`);--> statement-breakpoint
CREATE TABLE `quota_accounts` (
	`account_id` text PRIMARY KEY NOT NULL,
	`charged` integer DEFAULT 0 NOT NULL,
	`reserved` integer DEFAULT 0 NOT NULL,
	`custom_limits` integer DEFAULT 0 NOT NULL,
	`soft_limit` integer,
	`hard_limit` integer,
	`hard_since` integer,
	`suspended_at` integer,
	`sponsor_id` text
);
--> statement-breakpoint
CREATE TABLE `upload_sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`uploader_id` text NOT NULL,
	`payer_id` text NOT NULL,
	`kind` text NOT NULL,
	`declared_size` integer NOT NULL,
	`content_hash` text,
	`album_id` text,
	`intent_id` text,
	`drop_link_id` text,
	`state` text NOT NULL,
	`received_size` integer,
	`received_hash` text,
	`asset_id` text,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `upload_sessions_payer_idx` ON `upload_sessions` (`payer_id`,`expires_at`);--> statement-breakpoint
CREATE INDEX `upload_sessions_album_idx` ON `upload_sessions` (`album_id`);--> statement-breakpoint
CREATE INDEX `upload_sessions_expiry_idx` ON `upload_sessions` (`expires_at`);