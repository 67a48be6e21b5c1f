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