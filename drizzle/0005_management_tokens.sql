CREATE TABLE `management_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`scopes` text NOT NULL,
	`label` text,
	`created_at` text NOT NULL,
	`expires_at` text NOT NULL,
	`revoked_at` text
);
