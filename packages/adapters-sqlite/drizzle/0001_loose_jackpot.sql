CREATE TABLE `federated_intakes` (
	`id` text PRIMARY KEY NOT NULL,
	`uploader_id` text NOT NULL,
	`receiver_id` text NOT NULL,
	`peer` text NOT NULL,
	`declared_size` integer NOT NULL,
	`content_hash` text NOT NULL,
	`state` text NOT NULL,
	`received_size` integer,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `federated_intakes_budget_idx` ON `federated_intakes` (`receiver_id`,`peer`,`state`);--> statement-breakpoint
CREATE TABLE `link_drops` (
	`upload_id` text PRIMARY KEY NOT NULL,
	`link_id` text NOT NULL,
	`owner_id` text NOT NULL,
	`token_hash` text NOT NULL,
	`declared_size` integer NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`link_id`) REFERENCES `links`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `link_drops_link_idx` ON `link_drops` (`link_id`);--> statement-breakpoint
CREATE TABLE `links` (
	`id` text PRIMARY KEY NOT NULL,
	`owner_id` text NOT NULL,
	`kind` text NOT NULL,
	`album_id` text,
	`asset_ids` text NOT NULL,
	`wrapped_key` text,
	`seal_key` text,
	`max_bytes` integer,
	`accepted_bytes` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer,
	`revoked_at` integer
);
--> statement-breakpoint
CREATE INDEX `links_owner_idx` ON `links` (`owner_id`);--> statement-breakpoint
CREATE TABLE `sponsored_accounts` (
	`account_id` text PRIMARY KEY NOT NULL,
	`sponsor_id` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `sponsored_accounts_sponsor_idx` ON `sponsored_accounts` (`sponsor_id`);--> statement-breakpoint
CREATE TABLE `sponsored_owners` (
	`account_id` text NOT NULL,
	`owner_id` text NOT NULL,
	`seq` integer NOT NULL,
	PRIMARY KEY(`account_id`, `owner_id`),
	FOREIGN KEY (`account_id`) REFERENCES `sponsored_accounts`(`account_id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `sponsored_owners_owner_idx` ON `sponsored_owners` (`owner_id`);