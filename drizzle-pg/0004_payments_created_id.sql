DROP INDEX "payments_created";--> statement-breakpoint
CREATE INDEX "payments_created" ON "payments" USING btree ("created_at","id");