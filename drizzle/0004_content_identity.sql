ALTER TABLE `content_files` ADD `ino` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `content_files` ADD `ctime_us` integer DEFAULT 0 NOT NULL;