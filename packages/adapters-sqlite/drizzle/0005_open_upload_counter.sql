ALTER TABLE `quota_accounts` ADD `open_uploads` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- The counter starts as what it counts: each payer's sessions in an open state.
UPDATE `quota_accounts` SET `open_uploads` = (SELECT count(*) FROM `upload_sessions` s WHERE s.`payer_id` = `quota_accounts`.`account_id` AND s.`state` IN ('Pending', 'Uploading', 'WaitingForProcessing'));
