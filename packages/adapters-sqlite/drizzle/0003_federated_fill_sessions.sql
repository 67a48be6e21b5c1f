DROP TABLE `federated_intakes`;--> statement-breakpoint
ALTER TABLE `upload_sessions` ADD `source_peer` text;