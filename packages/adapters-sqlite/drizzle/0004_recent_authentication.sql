ALTER TABLE `accounts` ADD `credentials_changed_at` integer;--> statement-breakpoint
ALTER TABLE `sessions` ADD `authenticated_at` integer DEFAULT 0 NOT NULL;