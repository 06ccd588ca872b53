CREATE TABLE `entitlements` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`payer` text NOT NULL,
	`scope` text NOT NULL,
	`cid` text,
	`instruction_id` text NOT NULL,
	`source` text NOT NULL,
	`payment_id` integer,
	`granted_at` text NOT NULL,
	`expires_at` integer,
	`revoked_at` text,
	`note` text,
	FOREIGN KEY (`payment_id`) REFERENCES `payments`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `entitlements_payer_cid` ON `entitlements` (`payer`,`cid`);--> statement-breakpoint
CREATE INDEX `entitlements_payer_instruction` ON `entitlements` (`payer`,`instruction_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `entitlements_payment` ON `entitlements` (`payment_id`);--> statement-breakpoint
ALTER TABLE `payment_instructions` ADD `access` text DEFAULT 'forever' NOT NULL;--> statement-breakpoint
ALTER TABLE `payment_instructions` ADD `access_scope` text DEFAULT 'cid' NOT NULL;