CREATE TABLE `sign_in_counts` (
	`key` text PRIMARY KEY NOT NULL,
	`state` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `sign_in_tickets` (
	`ticket_hash` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`issued_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`credentials_at` integer,
	`wrong_passwords` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `sign_in_tickets_account` ON `sign_in_tickets` (`account_id`);