CREATE TABLE `upload_segments` (
	`upload_id` text NOT NULL,
	`start` integer NOT NULL,
	`length` integer NOT NULL,
	`segment_id` text NOT NULL,
	PRIMARY KEY(`upload_id`, `start`),
	FOREIGN KEY (`upload_id`) REFERENCES `upload_sessions`(`id`) ON UPDATE no action ON DELETE cascade
);
