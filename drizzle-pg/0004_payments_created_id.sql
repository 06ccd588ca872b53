-- The new index is built first, under another name, and the old one dropped last: DROP INDEX holds
-- the table's ACCESS EXCLUSIVE lock until the migration commits, so dropped first it would stop every
-- read of payments on the replicas still running for the whole build (a rolling upgrade).
CREATE INDEX "payments_created_id" ON "payments" USING btree ("created_at","id");--> statement-breakpoint
DROP INDEX "payments_created";--> statement-breakpoint
ALTER INDEX "payments_created_id" RENAME TO "payments_created";
