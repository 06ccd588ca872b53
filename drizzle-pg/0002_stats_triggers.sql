-- Written by hand (drizzle-kit declares no triggers): the sales rollups' only writer, the PL/pgSQL
-- twin of drizzle/0006_stats.sql with the same semantics. Row triggers run inside the statement
-- that changes a payment, so the rollups commit and roll back with the ledger, whoever writes it.
-- A row counts while it is settled: leaving "settled" takes it out, entering puts it in (hour of
-- created_at: its first 13 characters, "YYYY-MM-DDTHH"). Amounts of 16 characters or more are
-- counted in `oversized`, not summed: 15 digits always fit a bigint, and a sum of them overflows
-- only past 9,000 payments of $1e9 in one row (then PostgreSQL refuses the write, "bigint out of
-- range", where SQLite would turn the sum into a float).
-- Rollup rows that fall to 0 sales stay, as in SQLite.

-- SQLite's CAST(text AS INTEGER) for the short amounts: the longest leading integer (spaces
-- skipped, a sign allowed), 0 when there is none. The ledger stores decimal digits only; this
-- keeps a malformed amount from failing a payment's write here where SQLite would accept it.
CREATE FUNCTION sales_amount(a text) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN length(a) <= 15 THEN coalesce(substring(a from '^ *([+-]?[0-9]+)'), '0')::bigint ELSE 0 END
$$;
--> statement-breakpoint
CREATE FUNCTION sales_oversized(a text) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN length(a) <= 15 THEN 0 ELSE 1 END
$$;
--> statement-breakpoint
-- NEW enters the rollups: one more sale in its three rows (made when missing).
CREATE FUNCTION payments_sales_in() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO sales_hourly AS r (hour, network, asset, sales, amount, oversized)
	VALUES (substr(NEW.created_at, 1, 13), NEW.network, NEW.asset, 1, sales_amount(NEW.amount), sales_oversized(NEW.amount))
	ON CONFLICT (hour, network, asset) DO UPDATE
	SET sales = r.sales + 1, amount = r.amount + excluded.amount, oversized = r.oversized + excluded.oversized;
	INSERT INTO sales_instruction_hourly AS r (instruction_id, hour, network, asset, sales, amount, oversized)
	VALUES (NEW.instruction_id, substr(NEW.created_at, 1, 13), NEW.network, NEW.asset, 1, sales_amount(NEW.amount), sales_oversized(NEW.amount))
	ON CONFLICT (instruction_id, hour, network, asset) DO UPDATE
	SET sales = r.sales + 1, amount = r.amount + excluded.amount, oversized = r.oversized + excluded.oversized;
	INSERT INTO sales_totals AS r (instruction_id, network, asset, sales, amount, oversized)
	VALUES (NEW.instruction_id, NEW.network, NEW.asset, 1, sales_amount(NEW.amount), sales_oversized(NEW.amount))
	ON CONFLICT (instruction_id, network, asset) DO UPDATE
	SET sales = r.sales + 1, amount = r.amount + excluded.amount, oversized = r.oversized + excluded.oversized;
	RETURN NULL;
END
$$;
--> statement-breakpoint
-- OLD leaves the rollups: one sale less in its three rows (which exist: it entered them).
CREATE FUNCTION payments_sales_out() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE sales_hourly SET sales = sales - 1, amount = amount - sales_amount(OLD.amount), oversized = oversized - sales_oversized(OLD.amount)
	WHERE hour = substr(OLD.created_at, 1, 13) AND network = OLD.network AND asset = OLD.asset;
	UPDATE sales_instruction_hourly SET sales = sales - 1, amount = amount - sales_amount(OLD.amount), oversized = oversized - sales_oversized(OLD.amount)
	WHERE instruction_id = OLD.instruction_id AND hour = substr(OLD.created_at, 1, 13) AND network = OLD.network AND asset = OLD.asset;
	UPDATE sales_totals SET sales = sales - 1, amount = amount - sales_amount(OLD.amount), oversized = oversized - sales_oversized(OLD.amount)
	WHERE instruction_id = OLD.instruction_id AND network = OLD.network AND asset = OLD.asset;
	RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER payments_sales_insert AFTER INSERT ON payments
FOR EACH ROW WHEN (NEW.state = 'settled') EXECUTE FUNCTION payments_sales_in();
--> statement-breakpoint
-- As in SQLite, "UPDATE OF" fires when a listed column is SET, changed or not: out then in (or in
-- then out: PostgreSQL fires by name) leaves the rows as they were.
CREATE TRIGGER payments_sales_update_out AFTER UPDATE OF state, amount, created_at, instruction_id, network, asset ON payments
FOR EACH ROW WHEN (OLD.state = 'settled') EXECUTE FUNCTION payments_sales_out();
--> statement-breakpoint
CREATE TRIGGER payments_sales_update_in AFTER UPDATE OF state, amount, created_at, instruction_id, network, asset ON payments
FOR EACH ROW WHEN (NEW.state = 'settled') EXECUTE FUNCTION payments_sales_in();
--> statement-breakpoint
CREATE TRIGGER payments_sales_delete AFTER DELETE ON payments
FOR EACH ROW WHEN (OLD.state = 'settled') EXECUTE FUNCTION payments_sales_out();
