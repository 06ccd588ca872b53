/**
 * What the commands that act on the database share: CIDGATE_DB read from the
 * settings, refused when missing (existing-db.ts; `create` for the one
 * command that may come before the server's first start), its stores opened, an
 * ApiError from them answered as one line (exit 1), the database closed.
 * CIDGATE_DB=postgres://... opens PostgreSQL (migrated at open, as a server
 * start does) and the PostgreSQL stores, with this machine's content index
 * (CONTENT_INDEX_DB) as their local SQLite file; the commands await every
 * store call, so they run the same on either engine.
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
  if (selectsPostgres(settings.db)) return withPgStores(who, settings, body);
  if (!create && missingDatabase(who, settings.db)) return 1;
  const [{ openDb }, { createStores }] = await Promise.all([import("../db/client"), import("../stores")]);
  const db = openDb(settings.db);
  try {
    return await answered(who, () => body(createStores(db, settings), { settings }));
  } finally {
    db.sqlite.close();
  }
}

async function withPgStores(
  who: string,
  settings: Settings,
  body: (stores: Stores, open: { settings: Settings }) => number | Promise<number>,
): Promise<number> {
  const [{ openDb }, { openPg }, { createPgStores }] = await Promise.all([
    import("../db/client"),
    import("../db/pg"),
    import("../stores-pg"),
  ]);
  let pg: Awaited<ReturnType<typeof openPg>>;
  try {
    pg = await openPg(settings.db);
  } catch (e) {
    // One line naming the server, never the password (db/pg.ts).
    console.error(`${who}: ${(e as Error).message}`);
    return 1;
  }
  const local = openDb(settings.contentIndexDb);
  try {
    const stores = createPgStores(pg, { local, settings });
    try {
      return await answered(who, () => body(stores, { settings }));
    } finally {
      stores.stop();
    }
  } finally {
    local.sqlite.close();
    await pg.close();
  }
}

/** An ApiError from the stores (a refused id, a conflict) as one line, exit 1. */
async function answered(who: string, run: () => number | Promise<number>): Promise<number> {
  const { ApiError } = await import("../http/errors");
  try {
    return await run();
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    console.error(`${who}: ${e.message}`);
    return 1;
  }
}
