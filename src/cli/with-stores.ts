/**
 * What the commands that act on the database share: CIDGATE_DB read from the
 * settings, refused when missing (existing-db.ts; `create` for the one
 * command that may come before the server's first start), its stores opened, an
 * ApiError from them answered as one line (exit 1), the database closed.
 * The database is opened as a server opens it (db/database.ts): SQLite, or
 * with CIDGATE_DB=postgres://... PostgreSQL (migrated at open, as a start
 * does) and its stores, with this machine's content index (CONTENT_INDEX_DB)
 * as their local SQLite file. The commands await every store call, so they
 * run the same on either engine.
 * The database modules load when a command runs, not when `cidgate --help`
 * loads every command's file.
 */
import { loadSettingsOrReport, type Settings, selectsPostgres } from "../settings";
import type { Stores } from "../stores";
import { missingDatabase } from "./existing-db";

export async function withStores(
  who: string,
  body: (stores: Stores, open: { settings: Settings }) => number | Promise<number>,
  { create = false } = {},
): Promise<number> {
  const settings = loadSettingsOrReport(who);
  if (!settings) return 2;
  if (!create && !selectsPostgres(settings.db) && missingDatabase(who, settings.db)) return 1;
  const [{ openDatabase }, { ApiError }] = await Promise.all([import("../db/database"), import("../http/errors")]);
  let opened: Awaited<ReturnType<typeof openDatabase>>;
  try {
    opened = await openDatabase(settings);
  } catch (e) {
    // PostgreSQL's refusals are one line naming the server, never the password (db/pg.ts).
    if (!selectsPostgres(settings.db)) throw e;
    console.error(`${who}: ${(e as Error).message}`);
    return 1;
  }
  try {
    return await body(opened.stores, { settings });
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    console.error(`${who}: ${e.message}`);
    return 1;
  } finally {
    await opened.close();
  }
}
