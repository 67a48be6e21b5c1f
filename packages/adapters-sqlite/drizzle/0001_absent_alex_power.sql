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
