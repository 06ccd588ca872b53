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
CREATE TABLE `funnel_instruction_hourly` (
	`instruction_id` text NOT NULL,
	`hour` text NOT NULL,
	`offers` integer NOT NULL,
	`proofs` integer NOT NULL,
	PRIMARY KEY(`instruction_id`, `hour`)
);
--> statement-breakpoint
CREATE INDEX `funnel_instruction_hourly_hour` ON `funnel_instruction_hourly` (`hour`);--> statement-breakpoint
CREATE TABLE `funnel_shop_hourly` (
	`hour` text PRIMARY KEY NOT NULL,
	`offers` integer NOT NULL,
	`proofs` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `sales_hourly` (
	`hour` text NOT NULL,
	`network` text NOT NULL,
	`asset` text NOT NULL,
	`sales` integer NOT NULL,
	`amount` integer NOT NULL,
	`oversized` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`hour`, `network`, `asset`)
);
--> statement-breakpoint
CREATE TABLE `sales_instruction_hourly` (
	`instruction_id` text NOT NULL,
	`hour` text NOT NULL,
	`network` text NOT NULL,
	`asset` text NOT NULL,
	`sales` integer NOT NULL,
	`amount` integer NOT NULL,
	`oversized` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`instruction_id`, `hour`, `network`, `asset`)
);
--> statement-breakpoint
CREATE INDEX `sales_instruction_hourly_hour` ON `sales_instruction_hourly` (`hour`);--> statement-breakpoint
CREATE TABLE `sales_totals` (
	`instruction_id` text NOT NULL,
	`network` text NOT NULL,
	`asset` text NOT NULL,
	`sales` integer NOT NULL,
	`amount` integer NOT NULL,
	`oversized` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`instruction_id`, `network`, `asset`)
);
--> statement-breakpoint
CREATE INDEX `payments_payer_lower` ON `payments` (lower("payer"),`id`);--> statement-breakpoint
CREATE INDEX `payments_pending` ON `payments` (`id`) WHERE "payments"."state" = 'pending';
--> statement-breakpoint
-- Written by hand (drizzle-kit declares no triggers): the sales rollups' only writer. Each trigger
-- runs inside the statement that changes a payment, so the rollups commit and roll back with the
-- ledger, whoever writes it. A row counts while it is settled: leaving "settled" takes it out,
-- entering puts it in (hour of created_at, UTC). Amounts of 16 digits or more are counted in
-- `oversized`, not summed (64-bit sums; reads meeting one sum the ledger).
CREATE TRIGGER `payments_sales_insert` AFTER INSERT ON `payments` WHEN NEW.`state` = 'settled' BEGIN
	INSERT INTO `sales_hourly` (`hour`, `network`, `asset`, `sales`, `amount`, `oversized`)
	VALUES (substr(NEW.`created_at`, 1, 13), NEW.`network`, NEW.`asset`, 1,
		CASE WHEN length(NEW.`amount`) <= 15 THEN CAST(NEW.`amount` AS INTEGER) ELSE 0 END,
		CASE WHEN length(NEW.`amount`) <= 15 THEN 0 ELSE 1 END)
	ON CONFLICT DO UPDATE SET `sales` = `sales` + 1, `amount` = `amount` + excluded.`amount`, `oversized` = `oversized` + excluded.`oversized`;
	INSERT INTO `sales_instruction_hourly` (`instruction_id`, `hour`, `network`, `asset`, `sales`, `amount`, `oversized`)
	VALUES (NEW.`instruction_id`, substr(NEW.`created_at`, 1, 13), NEW.`network`, NEW.`asset`, 1,
		CASE WHEN length(NEW.`amount`) <= 15 THEN CAST(NEW.`amount` AS INTEGER) ELSE 0 END,
		CASE WHEN length(NEW.`amount`) <= 15 THEN 0 ELSE 1 END)
	ON CONFLICT DO UPDATE SET `sales` = `sales` + 1, `amount` = `amount` + excluded.`amount`, `oversized` = `oversized` + excluded.`oversized`;
	INSERT INTO `sales_totals` (`instruction_id`, `network`, `asset`, `sales`, `amount`, `oversized`)
	VALUES (NEW.`instruction_id`, NEW.`network`, NEW.`asset`, 1,
		CASE WHEN length(NEW.`amount`) <= 15 THEN CAST(NEW.`amount` AS INTEGER) ELSE 0 END,
		CASE WHEN length(NEW.`amount`) <= 15 THEN 0 ELSE 1 END)
	ON CONFLICT DO UPDATE SET `sales` = `sales` + 1, `amount` = `amount` + excluded.`amount`, `oversized` = `oversized` + excluded.`oversized`;
END;
--> statement-breakpoint
CREATE TRIGGER `payments_sales_update_out` AFTER UPDATE OF `state`, `amount`, `created_at`, `instruction_id`, `network`, `asset` ON `payments` WHEN OLD.`state` = 'settled' BEGIN
	UPDATE `sales_hourly` SET `sales` = `sales` - 1,
		`amount` = `amount` - CASE WHEN length(OLD.`amount`) <= 15 THEN CAST(OLD.`amount` AS INTEGER) ELSE 0 END,
		`oversized` = `oversized` - CASE WHEN length(OLD.`amount`) <= 15 THEN 0 ELSE 1 END
	WHERE `hour` = substr(OLD.`created_at`, 1, 13) AND `network` = OLD.`network` AND `asset` = OLD.`asset`;
	UPDATE `sales_instruction_hourly` SET `sales` = `sales` - 1,
		`amount` = `amount` - CASE WHEN length(OLD.`amount`) <= 15 THEN CAST(OLD.`amount` AS INTEGER) ELSE 0 END,
		`oversized` = `oversized` - CASE WHEN length(OLD.`amount`) <= 15 THEN 0 ELSE 1 END
	WHERE `instruction_id` = OLD.`instruction_id` AND `hour` = substr(OLD.`created_at`, 1, 13) AND `network` = OLD.`network` AND `asset` = OLD.`asset`;
	UPDATE `sales_totals` SET `sales` = `sales` - 1,
		`amount` = `amount` - CASE WHEN length(OLD.`amount`) <= 15 THEN CAST(OLD.`amount` AS INTEGER) ELSE 0 END,
		`oversized` = `oversized` - CASE WHEN length(OLD.`amount`) <= 15 THEN 0 ELSE 1 END
	WHERE `instruction_id` = OLD.`instruction_id` AND `network` = OLD.`network` AND `asset` = OLD.`asset`;
END;
--> statement-breakpoint
CREATE TRIGGER `payments_sales_update_in` AFTER UPDATE OF `state`, `amount`, `created_at`, `instruction_id`, `network`, `asset` ON `payments` WHEN NEW.`state` = 'settled' BEGIN
	INSERT INTO `sales_hourly` (`hour`, `network`, `asset`, `sales`, `amount`, `oversized`)
	VALUES (substr(NEW.`created_at`, 1, 13), NEW.`network`, NEW.`asset`, 1,
		CASE WHEN length(NEW.`amount`) <= 15 THEN CAST(NEW.`amount` AS INTEGER) ELSE 0 END,
		CASE WHEN length(NEW.`amount`) <= 15 THEN 0 ELSE 1 END)
	ON CONFLICT DO UPDATE SET `sales` = `sales` + 1, `amount` = `amount` + excluded.`amount`, `oversized` = `oversized` + excluded.`oversized`;
	INSERT INTO `sales_instruction_hourly` (`instruction_id`, `hour`, `network`, `asset`, `sales`, `amount`, `oversized`)
	VALUES (NEW.`instruction_id`, substr(NEW.`created_at`, 1, 13), NEW.`network`, NEW.`asset`, 1,
		CASE WHEN length(NEW.`amount`) <= 15 THEN CAST(NEW.`amount` AS INTEGER) ELSE 0 END,
		CASE WHEN length(NEW.`amount`) <= 15 THEN 0 ELSE 1 END)
	ON CONFLICT DO UPDATE SET `sales` = `sales` + 1, `amount` = `amount` + excluded.`amount`, `oversized` = `oversized` + excluded.`oversized`;
	INSERT INTO `sales_totals` (`instruction_id`, `network`, `asset`, `sales`, `amount`, `oversized`)
	VALUES (NEW.`instruction_id`, NEW.`network`, NEW.`asset`, 1,
		CASE WHEN length(NEW.`amount`) <= 15 THEN CAST(NEW.`amount` AS INTEGER) ELSE 0 END,
		CASE WHEN length(NEW.`amount`) <= 15 THEN 0 ELSE 1 END)
	ON CONFLICT DO UPDATE SET `sales` = `sales` + 1, `amount` = `amount` + excluded.`amount`, `oversized` = `oversized` + excluded.`oversized`;
END;
--> statement-breakpoint
CREATE TRIGGER `payments_sales_delete` AFTER DELETE ON `payments` WHEN OLD.`state` = 'settled' BEGIN
	UPDATE `sales_hourly` SET `sales` = `sales` - 1,
		`amount` = `amount` - CASE WHEN length(OLD.`amount`) <= 15 THEN CAST(OLD.`amount` AS INTEGER) ELSE 0 END,
		`oversized` = `oversized` - CASE WHEN length(OLD.`amount`) <= 15 THEN 0 ELSE 1 END
	WHERE `hour` = substr(OLD.`created_at`, 1, 13) AND `network` = OLD.`network` AND `asset` = OLD.`asset`;
	UPDATE `sales_instruction_hourly` SET `sales` = `sales` - 1,
		`amount` = `amount` - CASE WHEN length(OLD.`amount`) <= 15 THEN CAST(OLD.`amount` AS INTEGER) ELSE 0 END,
		`oversized` = `oversized` - CASE WHEN length(OLD.`amount`) <= 15 THEN 0 ELSE 1 END
	WHERE `instruction_id` = OLD.`instruction_id` AND `hour` = substr(OLD.`created_at`, 1, 13) AND `network` = OLD.`network` AND `asset` = OLD.`asset`;
	UPDATE `sales_totals` SET `sales` = `sales` - 1,
		`amount` = `amount` - CASE WHEN length(OLD.`amount`) <= 15 THEN CAST(OLD.`amount` AS INTEGER) ELSE 0 END,
		`oversized` = `oversized` - CASE WHEN length(OLD.`amount`) <= 15 THEN 0 ELSE 1 END
	WHERE `instruction_id` = OLD.`instruction_id` AND `network` = OLD.`network` AND `asset` = OLD.`asset`;
END;
--> statement-breakpoint
-- The payments settled before this migration.
INSERT INTO `sales_hourly` (`hour`, `network`, `asset`, `sales`, `amount`, `oversized`)
SELECT substr(`created_at`, 1, 13), `network`, `asset`, count(*),
	sum(CASE WHEN length(`amount`) <= 15 THEN CAST(`amount` AS INTEGER) ELSE 0 END),
	sum(CASE WHEN length(`amount`) <= 15 THEN 0 ELSE 1 END)
FROM `payments` WHERE `state` = 'settled' GROUP BY 1, 2, 3;
--> statement-breakpoint
INSERT INTO `sales_instruction_hourly` (`instruction_id`, `hour`, `network`, `asset`, `sales`, `amount`, `oversized`)
SELECT `instruction_id`, substr(`created_at`, 1, 13), `network`, `asset`, count(*),
	sum(CASE WHEN length(`amount`) <= 15 THEN CAST(`amount` AS INTEGER) ELSE 0 END),
	sum(CASE WHEN length(`amount`) <= 15 THEN 0 ELSE 1 END)
FROM `payments` WHERE `state` = 'settled' GROUP BY 1, 2, 3, 4;
--> statement-breakpoint
INSERT INTO `sales_totals` (`instruction_id`, `network`, `asset`, `sales`, `amount`, `oversized`)
SELECT `instruction_id`, `network`, `asset`, count(*),
	sum(CASE WHEN length(`amount`) <= 15 THEN CAST(`amount` AS INTEGER) ELSE 0 END),
	sum(CASE WHEN length(`amount`) <= 15 THEN 0 ELSE 1 END)
FROM `payments` WHERE `state` = 'settled' GROUP BY 1, 2, 3;
