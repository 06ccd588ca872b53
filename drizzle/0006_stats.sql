CREATE TABLE `funnel_hourly` (
	`cid` text NOT NULL,
	`hour` text NOT NULL,
	`instruction_id` text NOT NULL,
	`offers` integer NOT NULL,
	`proofs` integer NOT NULL,
	PRIMARY KEY(`cid`, `hour`, `instruction_id`)
);
--> statement-breakpoint
CREATE INDEX `funnel_hourly_hour` ON `funnel_hourly` (`hour`);--> statement-breakpoint
CREATE TABLE `funnel_totals_hourly` (
	`hour` text NOT NULL,
	`instruction_id` text NOT NULL,
	`offers` integer NOT NULL,
	`proofs` integer NOT NULL,
	PRIMARY KEY(`hour`, `instruction_id`)
);
--> statement-breakpoint
CREATE INDEX `funnel_totals_instruction` ON `funnel_totals_hourly` (`instruction_id`,`hour`);--> statement-breakpoint
CREATE TABLE `sales_hourly` (
	`hour` text NOT NULL,
	`instruction_id` text NOT NULL,
	`network` text NOT NULL,
	`asset` text NOT NULL,
	`sales` integer NOT NULL,
	`amount` integer NOT NULL,
	`oversized` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`hour`, `instruction_id`, `network`, `asset`)
);
--> statement-breakpoint
CREATE INDEX `sales_hourly_instruction` ON `sales_hourly` (`instruction_id`,`hour`);--> statement-breakpoint
CREATE INDEX `payments_payer_lower` ON `payments` (lower("payer"),`id`);--> statement-breakpoint
CREATE INDEX `payments_pending` ON `payments` (`id`) WHERE "payments"."state" = 'pending';--> statement-breakpoint
-- Written by hand (drizzle-kit declares no triggers): sales_hourly's only writer. Each trigger runs
-- inside the statement that changes a payment, so the rollup commits and rolls back with the ledger,
-- whoever writes it. A row counts while it is settled: leaving "settled" takes it out, entering puts
-- it in (hour of created_at, UTC).
CREATE TRIGGER `payments_sales_insert` AFTER INSERT ON `payments` WHEN NEW.`state` = 'settled' BEGIN
	INSERT INTO `sales_hourly` (`hour`, `instruction_id`, `network`, `asset`, `sales`, `amount`, `oversized`)
	VALUES (substr(NEW.`created_at`, 1, 13), NEW.`instruction_id`, NEW.`network`, NEW.`asset`, 1,
		CASE WHEN length(NEW.`amount`) <= 15 THEN CAST(NEW.`amount` AS INTEGER) ELSE 0 END,
		CASE WHEN length(NEW.`amount`) <= 15 THEN 0 ELSE 1 END)
	ON CONFLICT DO UPDATE SET `sales` = `sales` + 1, `amount` = `amount` + excluded.`amount`, `oversized` = `oversized` + excluded.`oversized`;
END;
--> statement-breakpoint
CREATE TRIGGER `payments_sales_update_out` AFTER UPDATE OF `state`, `amount`, `created_at`, `instruction_id`, `network`, `asset` ON `payments` WHEN OLD.`state` = 'settled' BEGIN
	UPDATE `sales_hourly` SET `sales` = `sales` - 1,
		`amount` = `amount` - CASE WHEN length(OLD.`amount`) <= 15 THEN CAST(OLD.`amount` AS INTEGER) ELSE 0 END,
		`oversized` = `oversized` - CASE WHEN length(OLD.`amount`) <= 15 THEN 0 ELSE 1 END
	WHERE `hour` = substr(OLD.`created_at`, 1, 13) AND `instruction_id` = OLD.`instruction_id` AND `network` = OLD.`network` AND `asset` = OLD.`asset`;
END;
--> statement-breakpoint
CREATE TRIGGER `payments_sales_update_in` AFTER UPDATE OF `state`, `amount`, `created_at`, `instruction_id`, `network`, `asset` ON `payments` WHEN NEW.`state` = 'settled' BEGIN
	INSERT INTO `sales_hourly` (`hour`, `instruction_id`, `network`, `asset`, `sales`, `amount`, `oversized`)
	VALUES (substr(NEW.`created_at`, 1, 13), NEW.`instruction_id`, NEW.`network`, NEW.`asset`, 1,
		CASE WHEN length(NEW.`amount`) <= 15 THEN CAST(NEW.`amount` AS INTEGER) ELSE 0 END,
		CASE WHEN length(NEW.`amount`) <= 15 THEN 0 ELSE 1 END)
	ON CONFLICT DO UPDATE SET `sales` = `sales` + 1, `amount` = `amount` + excluded.`amount`, `oversized` = `oversized` + excluded.`oversized`;
END;
--> statement-breakpoint
CREATE TRIGGER `payments_sales_delete` AFTER DELETE ON `payments` WHEN OLD.`state` = 'settled' BEGIN
	UPDATE `sales_hourly` SET `sales` = `sales` - 1,
		`amount` = `amount` - CASE WHEN length(OLD.`amount`) <= 15 THEN CAST(OLD.`amount` AS INTEGER) ELSE 0 END,
		`oversized` = `oversized` - CASE WHEN length(OLD.`amount`) <= 15 THEN 0 ELSE 1 END
	WHERE `hour` = substr(OLD.`created_at`, 1, 13) AND `instruction_id` = OLD.`instruction_id` AND `network` = OLD.`network` AND `asset` = OLD.`asset`;
END;
--> statement-breakpoint
-- The payments settled before this migration.
INSERT INTO `sales_hourly` (`hour`, `instruction_id`, `network`, `asset`, `sales`, `amount`, `oversized`)
SELECT substr(`created_at`, 1, 13), `instruction_id`, `network`, `asset`, count(*),
	sum(CASE WHEN length(`amount`) <= 15 THEN CAST(`amount` AS INTEGER) ELSE 0 END),
	sum(CASE WHEN length(`amount`) <= 15 THEN 0 ELSE 1 END)
FROM `payments` WHERE `state` = 'settled' GROUP BY 1, 2, 3, 4;
