CREATE TABLE `payment_resolutions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`payment_id` integer NOT NULL,
	`action` text NOT NULL,
	`outcome` text NOT NULL,
	`basis` text NOT NULL,
	`tx_hash` text,
	`actor` text NOT NULL,
	`note` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `payment_resolutions_payment` ON `payment_resolutions` (`payment_id`,`id`);