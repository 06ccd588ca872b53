CREATE TABLE `cid_mappings` (
	`cid` text PRIMARY KEY NOT NULL,
	`instruction_id` text NOT NULL,
	`source` text DEFAULT 'api' NOT NULL,
	`created_at` text NOT NULL,
	FOREIGN KEY (`instruction_id`) REFERENCES `payment_instructions`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `cid_mappings_instruction` ON `cid_mappings` (`instruction_id`,`cid`);--> statement-breakpoint
CREATE TABLE `content_files` (
	`path` text PRIMARY KEY NOT NULL,
	`cid` text NOT NULL,
	`size` integer NOT NULL,
	`mtime_ms` integer NOT NULL,
	`media_type` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `content_files_cid` ON `content_files` (`cid`);--> statement-breakpoint
CREATE TABLE `payment_instructions` (
	`id` text PRIMARY KEY NOT NULL,
	`version` integer DEFAULT 1 NOT NULL,
	`name` text NOT NULL,
	`description` text,
	`requirements` text NOT NULL,
	`source` text DEFAULT 'api' NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `payment_instructions_name_id` ON `payment_instructions` (`name`,`id`);--> statement-breakpoint
CREATE INDEX `payment_instructions_source` ON `payment_instructions` (`source`);--> statement-breakpoint
CREATE TABLE `payments` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`network` text NOT NULL,
	`asset` text NOT NULL,
	`payer` text NOT NULL,
	`nonce` text NOT NULL,
	`cid` text NOT NULL,
	`instruction_id` text NOT NULL,
	`instruction_version` integer NOT NULL,
	`amount` text NOT NULL,
	`pay_to` text NOT NULL,
	`state` text NOT NULL,
	`tx_hash` text,
	`valid_before` integer NOT NULL,
	`x402_version` integer NOT NULL,
	`proof_hash` text NOT NULL,
	`error` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `payments_authorization` ON `payments` (`network`,`asset`,`payer`,`nonce`);--> statement-breakpoint
CREATE INDEX `payments_cid` ON `payments` (`cid`,`id`);--> statement-breakpoint
CREATE INDEX `payments_payer` ON `payments` (`payer`,`id`);--> statement-breakpoint
CREATE INDEX `payments_instruction` ON `payments` (`instruction_id`,`id`);--> statement-breakpoint
CREATE INDEX `payments_created` ON `payments` (`created_at`);