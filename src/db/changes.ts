/**
 * The generation of what the gateway sells, one signal per app: the stores
 * that write payment_instructions, cid_mappings or content_files are handed
 * it and bump it once per committed write (a transaction, not a statement),
 * and the gateway's catalog throws its cached answers away when the number
 * moved. One integer compare per request instead of a query; ledger writes
 * do not move it, so a payment does not evict every cached 402. Commits by
 * other processes move `elsewhere()`: SQLite's data_version, or on
 * PostgreSQL the catalog_generation row every replica's writes bump.
 *
 * Made once per app (createStores) and shared by every store over its
 * database: a writer holding another signal would go unseen by the catalog,
 * since writes through the same connection do not move `data_version`.
 */
import type { Database } from "bun:sqlite";

export interface CatalogChanges {
  /** Read on every gateway request: a plain field, not a getter. */
  readonly generation: number;
  /** Call once after a committed write to payment_instructions, cid_mappings or content_files. */
  bump(): void;
  /** A number that moves when another process commits to the catalog's tables (asked at most every 100 ms). */
  elsewhere(): number;
}

export function createCatalogChanges(elsewhere: () => number = () => 0): CatalogChanges {
  const signal = {
    generation: 0,
    bump() {
      signal.generation++;
    },
    elsewhere,
  };
  return signal;
}

/** SQLite's data_version: moves when another connection (process) commits to the file. */
export function sqliteDataVersion(sqlite: Database): () => number {
  const query = sqlite.query<{ d: number }, []>("SELECT data_version AS d FROM pragma_data_version()");
  return () => query.get()?.d ?? -1;
}
