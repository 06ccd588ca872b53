-- Written by hand: catalog_generation's one row and the triggers that move it. Every statement
-- that changes payment_instructions or cid_mappings adds 1, once per statement (a reload that
-- writes a thousand mappings in one statement moves it once), in the writer's transaction: the
-- new number is seen with the change, never before. A statement that changes no row (a reload's
-- "delete what the file no longer has" finding nothing) leaves it, so unchanged reloads do not
-- empty every replica's cache of 402 offers: hence one trigger per event, each with a transition
-- table (PostgreSQL allows them only on single-event triggers).
-- The bump takes the row's lock until commit, so catalog writers across replicas queue on it:
-- catalog writes are rare and short, and YAML reconciles are serialized anyway.
INSERT INTO catalog_generation (id, generation) VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
--> statement-breakpoint
CREATE FUNCTION catalog_generation_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT 1 FROM changed) THEN
		UPDATE catalog_generation SET generation = generation + 1 WHERE id = 1;
	END IF;
	RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER payment_instructions_generation_insert AFTER INSERT ON payment_instructions
REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION catalog_generation_bump();
--> statement-breakpoint
CREATE TRIGGER payment_instructions_generation_update AFTER UPDATE ON payment_instructions
REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION catalog_generation_bump();
--> statement-breakpoint
CREATE TRIGGER payment_instructions_generation_delete AFTER DELETE ON payment_instructions
REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION catalog_generation_bump();
--> statement-breakpoint
CREATE TRIGGER cid_mappings_generation_insert AFTER INSERT ON cid_mappings
REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION catalog_generation_bump();
--> statement-breakpoint
CREATE TRIGGER cid_mappings_generation_update AFTER UPDATE ON cid_mappings
REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION catalog_generation_bump();
--> statement-breakpoint
CREATE TRIGGER cid_mappings_generation_delete AFTER DELETE ON cid_mappings
REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION catalog_generation_bump();
