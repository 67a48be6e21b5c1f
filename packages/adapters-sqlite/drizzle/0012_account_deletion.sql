ALTER TABLE `accounts` ADD `deleted_at` integer;--> statement-breakpoint
ALTER TABLE `handles` ADD `retired_at` integer;--> statement-breakpoint
ALTER TABLE `minted_capabilities` ADD `account_id` text;--> statement-breakpoint
CREATE INDEX `minted_capabilities_account_idx` ON `minted_capabilities` (`account_id`);