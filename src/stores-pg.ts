/**
 * The app's stores over PostgreSQL (CIDGATE_DB=postgres://...): the same
 * `Stores` as the SQLite set (stores.ts), each store from its own
 * `store-pg.ts` beside the SQLite one. The content index stays per replica,
 * in a local SQLite file: each replica indexes its own content folder, and a
 * CID missing there answers 404 on that replica, never after a charge.
 *
 * Other replicas' catalog writes are seen through the catalog_generation row
 * (moved by triggers, drizzle-pg/0003), polled every CATALOG_POLL_MS.
 */
import { createContentStore } from "./content/store";
import { createCatalogChanges } from "./db/changes";
import type { Db } from "./db/client";
import type { Pg } from "./db/pg";
import type { Settings } from "./settings";
import type { Stores } from "./stores";

export interface PgStoresOptions {
  /** The replica's own SQLite database, for its content index. */
  local: Db;
  settings: Pick<Settings, "contentDir">;
}

export interface PgStores extends Stores {
  /** Stops polling the catalog generation. */
  stop(): void;
}

export function createPgStores(pg: Pg, options: PgStoresOptions): PgStores {
  void pg;
  void options;
  void createContentStore;
  void createCatalogChanges;
  throw new Error("PostgreSQL stores: not assembled yet");
}
