/**
 * What the commands that act on the database share: CIDGATE_DB read from the
 * settings, refused when missing (existing-db.ts; `create` for the one
 * command that may come before the server's first start), its stores opened, an
 * ApiError from them answered as one line (exit 1), the database closed.
 * The database modules load when a command runs, not when `cidgate --help`
 * loads every command's file.
 */
import type { Db } from "../db/client";
import { loadSettingsOrReport, type Settings } from "../settings";
import type { Stores } from "../stores";
import { missingDatabase } from "./existing-db";

export async function withStores(
  who: string,
  body: (stores: Stores, open: { db: Db; settings: Settings }) => number | Promise<number>,
  { create = false } = {},
): Promise<number> {
  const settings = loadSettingsOrReport(who);
  if (!settings) return 2;
  if (!create && missingDatabase(who, settings.db)) return 1;
  const [{ openDb }, { createStores }, { ApiError }] = await Promise.all([
    import("../db/client"),
    import("../stores"),
    import("../http/errors"),
  ]);
  const db = openDb(settings.db);
  try {
    return await body(createStores(db, settings), { db, settings });
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    console.error(`${who}: ${e.message}`);
    return 1;
  } finally {
    db.sqlite.close();
  }
}
