CREATE TABLE `payment_identifiers` (
	`id` text PRIMARY KEY NOT NULL,
	`payload_hash` text NOT NULL,
	`payment_id` integer,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `siwx_nonces` (
	`nonce` text PRIMARY KEY NOT NULL,
	`used_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `siwx_nonces_used_at` ON `siwx_nonces` (`used_at`);