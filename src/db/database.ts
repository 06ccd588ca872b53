/**
 * The database a server runs on: SQLite (a path or `:memory:`, the default)
 * or PostgreSQL (CIDGATE_DB=postgres://..., several replicas on one
 * database). Chosen by the setting's spelling; everything above the stores
 * is the same on both (src/stores.ts, src/stores-pg.ts).
 */
import type { Warn } from "../private-files";
import { type Settings, selectsPostgres } from "../settings";
import type { Stores } from "../stores";
import { type Db, openDb } from "./client";
import { openPg, type Pg } from "./pg";

export type Database = Db | Pg;

export function isPg(db: Database): db is Pg {
  return "kind" in db && db.kind === "pg";
}

export interface OpenedDatabase {
  db: Database;
  /** Where this server's content index lives: the database itself on SQLite, a local file beside PostgreSQL. */
  contentDb: Db;
  stores: Stores;
  /** Stops what the stores run (PostgreSQL: the catalog poller) and closes every connection. */
  close(): Promise<void>;
}

/** Opens CIDGATE_DB and its stores; on PostgreSQL also this replica's own content index (SQLite). */
export async function openDatabase(
  settings: Pick<Settings, "db" | "contentDir" | "contentIndexDb">,
  options: { warn?: Warn } = {},
): Promise<OpenedDatabase> {
  if (!selectsPostgres(settings.db)) {
    const db = openDb(settings.db, options);
    const { createStores } = await import("../stores");
    return { db, contentDb: db, stores: createStores(db, settings), close: async () => db.sqlite.close() };
  }
  const pg = await openPg(settings.db);
  let local: Db;
  try {
    local = openDb(settings.contentIndexDb, options);
  } catch (e) {
    await pg.close();
    throw e;
  }
  const { createPgStores } = await import("../stores-pg");
  let stores: ReturnType<typeof createPgStores>;
  try {
    stores = createPgStores(pg, { local, settings });
  } catch (e) {
    local.sqlite.close();
    await pg.close();
    throw e;
  }
  return {
    db: pg,
    contentDb: local,
    stores,
    close: async () => {
      stores.stop();
      local.sqlite.close();
      await pg.close();
    },
  };
}
