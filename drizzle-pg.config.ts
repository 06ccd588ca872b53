import { defineConfig } from "drizzle-kit";

/** The PostgreSQL schema's migrations (CIDGATE_DB=postgres://...); drizzle.config.ts is SQLite's. */
export default defineConfig({
  dialect: "postgresql",
  schema: "./src/db/schema-pg.ts",
  out: "./drizzle-pg",
});
