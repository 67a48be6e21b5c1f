CREATE TABLE `handles` (
	`account_id` text PRIMARY KEY NOT NULL,
	`user_name` text NOT NULL,
	`published` integer DEFAULT false NOT NULL,
	`claimed_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `handles_user_name_unique` ON `handles` (`user_name`);--> statement-breakpoint
CREATE TABLE `minted_capabilities` (
	`jti` text PRIMARY KEY NOT NULL,
	`peer` text NOT NULL,
	`issued_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`revoked_at` integer
);
--> statement-breakpoint
CREATE INDEX `minted_capabilities_peer_idx` ON `minted_capabilities` (`peer`,`expires_at`);--> statement-breakpoint
CREATE INDEX `minted_capabilities_revoked_idx` ON `minted_capabilities` (`revoked_at`);--> statement-breakpoint
CREATE TABLE `peer_buckets` (
	`peer` text PRIMARY KEY NOT NULL,
	`level` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
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
--> statement-breakpoint
CREATE TABLE `identity_links` (
	`issuer` text NOT NULL,
	`subject` text NOT NULL,
	`account_id` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`issuer`, `subject`),
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `identity_links_account_idx` ON `identity_links` (`account_id`);--> statement-breakpoint
CREATE TABLE `oidc_flows` (
	`state_hash` text PRIMARY KEY NOT NULL,
	`purpose` text NOT NULL,
	`initiator` text,
	`return_to` text NOT NULL,
	`app_challenge` text,
	`sealed_verifier` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	FOREIGN KEY (`initiator`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `oidc_flows_expires_idx` ON `oidc_flows` (`expires_at`);--> statement-breakpoint
CREATE TABLE `oidc_login_codes` (
	`code_hash` text PRIMARY KEY NOT NULL,
	`purpose` text NOT NULL,
	`account_id` text NOT NULL,
	`app_challenge` text,
	`issuer` text,
	`subject` text,
	`authenticated_at` integer NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `oidc_login_codes_expires_idx` ON `oidc_login_codes` (`expires_at`);--> statement-breakpoint
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
--> statement-breakpoint
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
CREATE INDEX `sponsored_owners_owner_idx` ON `sponsored_owners` (`owner_id`);--> statement-breakpoint
PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_accounts` (
	`id` text PRIMARY KEY NOT NULL,
	`address` text,
	`address_key` text,
	`password_hash` text,
	`display_name` text,
	`created_at` integer NOT NULL,
	`locked_at` integer
);
--> statement-breakpoint
INSERT INTO `__new_accounts`("id", "address", "address_key", "password_hash", "display_name", "created_at", "locked_at") SELECT "id", "address", "address_key", "password_hash", "display_name", "created_at", "locked_at" FROM `accounts`;--> statement-breakpoint
DROP TABLE `accounts`;--> statement-breakpoint
ALTER TABLE `__new_accounts` RENAME TO `accounts`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE UNIQUE INDEX `accounts_address_key_unique` ON `accounts` (`address_key`);--> statement-breakpoint
ALTER TABLE `sessions` ADD `method` text DEFAULT 'password' NOT NULL;--> statement-breakpoint
CREATE INDEX `upload_sessions_open_payer_idx` ON `upload_sessions` (`payer_id`,`expires_at`) WHERE state IN ('Pending', 'Uploading', 'WaitingForProcessing');