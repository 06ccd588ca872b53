/**
 * `cidgate db copy --to postgres://...`: moves a shop from its SQLite file
 * (CIDGATE_DB) to PostgreSQL, so several replicas can share it
 * (docs/scaling.md). The copy itself is db-copy.ts. A group, so that other
 * operations on the database can sit beside `copy`.
 */
import { displayUrl } from "../display-url";
import { grid } from "../grid";
import { loadSettingsOrReport, selectsPostgres } from "../settings";
import { defineCommand, defineGroup, UsageError } from "./command";
import { missingDatabase } from "./existing-db";

const copy = defineCommand({
  name: "db copy",
  summary: "copy the SQLite shop at CIDGATE_DB into an empty PostgreSQL database, then verify it",
  options: {
    to: { type: "string", value: "<postgres://...>", description: "the PostgreSQL database to fill (required; empty)" },
  },
  notes:
    "CIDGATE_DB is only read. The target is migrated, then filled in one transaction (ids kept, sequences moved " +
    "past them), then counted: rows per table and settled sales per network and asset must equal the source's, " +
    "or nothing is committed (exit 1). Stop the server first: sales after the copy began stay in the SQLite file. " +
    "Then set CIDGATE_DB to the URL and the same JWT_SECRET on every replica (docs/scaling.md).",
  async run({ values, who }) {
    const to = values.to;
    if (to === undefined) throw new UsageError("--to is required: the PostgreSQL database to fill, postgres://...");
    if (!selectsPostgres(to)) throw new UsageError("--to must be a postgres:// or postgresql:// URL");
    const settings = loadSettingsOrReport(who);
    if (!settings) return 2;
    if (selectsPostgres(settings.db)) {
      console.error(`${who}: CIDGATE_DB is PostgreSQL already; db copy reads a SQLite shop`);
      return 1;
    }
    if (settings.db === ":memory:" || settings.db === "") {
      console.error(`${who}: CIDGATE_DB is :memory:; point it at the SQLite file to copy`);
      return 1;
    }
    if (missingDatabase(who, settings.db)) return 1;
    // Loaded when run: `cidgate --help` loads every command's file.
    const [{ Database }, { openPg }, { CopyRefused, checkSource, copyToPostgres }] = await Promise.all([
      import("bun:sqlite"),
      import("../db/pg"),
      import("./db-copy"),
    ]);
    const target = displayUrl(to);
    const source = new Database(settings.db, { readonly: true });
    try {
      source.exec("PRAGMA busy_timeout = 5000");
      checkSource(source);
      let pg: Awaited<ReturnType<typeof openPg>>;
      try {
        pg = await openPg(to);
      } catch (e) {
        // openPg's errors are one line naming the server, never the password.
        console.error(`${who}: ${(e as Error).message}`);
        return 1;
      }
      try {
        console.log(`copying ${settings.db} to ${target}`);
        const report = await copyToPostgres(source, pg);
        const mark = (same: boolean) => (same ? "ok" : "DIFFERS");
        console.log(
          grid([
            ["table", "sqlite", "postgres", ""],
            ...report.tables.map((t) => [t.table, String(t.sqlite), String(t.postgres), mark(t.sqlite === t.postgres)]),
          ]),
        );
        if (report.settled.length > 0) {
          console.log("\nsettled sales (amounts in the asset's smallest unit):");
          console.log(
            grid([
              ["network", "asset", "sqlite sales", "postgres sales", "sqlite amount", "postgres amount", ""],
              ...report.settled.map((s) => [
                s.network,
                s.asset,
                String(s.sqlite.sales),
                String(s.postgres.sales),
                s.sqlite.amount,
                s.postgres.amount,
                mark(s.sqlite.sales === s.postgres.sales && s.sqlite.amount === s.postgres.amount),
              ]),
            ]),
          );
        }
        if (!report.ok) {
          console.error(`${who}: the copy differs from its source (above); rolled back, nothing was written`);
          return 1;
        }
        console.log(
          `\ncopied and verified. Next, on every replica: CIDGATE_DB=${target} (with its password) and the same JWT_SECRET (docs/scaling.md)`,
        );
        return 0;
      } finally {
        await pg.close();
      }
    } catch (e) {
      if (e instanceof CopyRefused) {
        console.error(`${who}: ${e.message}; nothing was written`);
        return 1;
      }
      console.error(`${who}: the copy failed, rolled back, nothing was written: ${failure(e, to)}`);
      return 1;
    } finally {
      source.close();
    }
  },
});

/**
 * One line for a failed statement: the server's own reason and code, never drizzle's
 * "Failed query: <SQL> params: <values>" (the values are ledger rows and webhook secrets),
 * nor the URL or its password.
 */
function failure(e: unknown, url: string): string {
  const inner = e instanceof Error && e.cause instanceof Error ? e.cause : e;
  let reason = inner instanceof Error ? inner.message : String(inner);
  if (reason.startsWith("Failed query:")) reason = "a statement failed";
  let password = "";
  try {
    password = decodeURIComponent(new URL(url).password);
  } catch {}
  for (const secret of [url, password]) if (secret) reason = reason.split(secret).join("…");
  const code = inner instanceof Error && "code" in inner && inner.code ? ` (${inner.code})` : "";
  return `${reason.replace(/\s+/g, " ").trim()}${code}`;
}

export const command = defineGroup("db", "move the shop's database: copy SQLite into PostgreSQL", [copy]);
