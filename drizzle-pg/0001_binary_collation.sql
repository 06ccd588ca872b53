-- Written by hand (drizzle-kit declares no collations): every text column compares and sorts by
-- its bytes (COLLATE "C"), as SQLite's BINARY does, whatever locale the database was created with.
-- Under a language collation (en_US.UTF-8, a common default) "B" sorts after "a" and checksummed
-- addresses, names and ids would list in another order than on SQLite, and keyset paging would
-- page in that order. "C" is also the cheapest comparison. A text column added by a later
-- migration needs its own COLLATE "C" (this runs once, over the columns that exist now).
DO $$
DECLARE c record;
BEGIN
	FOR c IN
		SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND data_type = 'text'
		ORDER BY table_name, ordinal_position
	LOOP
		EXECUTE format('ALTER TABLE %I ALTER COLUMN %I TYPE text COLLATE "C"', c.table_name, c.column_name);
	END LOOP;
END
$$;
