/**
 * The shop as a server started now would serve it, without changing what a
 * running one serves: for `content list`, `doctor` and start-up's checks.
 * The content index of CIDGATE_DB is brought up to date through its store
 * (it only mirrors the folder, and hashing every file again per command would
 * cost minutes on a large folder); the pricing files are reconciled into a
 * throwaway in-memory database, never into CIDGATE_DB, so a command run with
 * another environment (another PAY_TO) cannot re-point a live shop's prices.
 * A rejected pricing reload leaves the last good state, as a server would.
 * With a PostgreSQL CIDGATE_DB the content index is this replica's own
 * SQLite file (CONTENT_INDEX_DB), and the API's prices are read from
 * PostgreSQL.
 */

import { SQL } from "bun";
import { createCatalogChanges } from "../db/changes";
import { type Db, openDb } from "../db/client";
import { displayUrl } from "../display-url";
import { createInstructionStore } from "../instructions/store";
import { createPricing, type ReloadReport } from "../pricing/service";
import { type Settings, selectsPostgres } from "../settings";
import { createStores } from "../stores";
import { type IndexedFile, indexedFiles, type PricedBy, pricedCids, pricedCidsOver } from "./listing";

export interface OpenShop {
  /** The SQLite database of the content index (CIDGATE_DB, or CONTENT_INDEX_DB beside PostgreSQL), for checks that read it (integrity); closed by close(). */
  db: Db;
  /** The pricing reload as a start would make it: files read, result, errors. */
  pricing: ReloadReport;
  /** Content files that could not be read (path and why). */
  unreadable: { path: string; message: string }[];
  files: IndexedFile[];
  /** CID -> instruction: the API's from CIDGATE_DB, the pricing files' as just loaded (or the last good state). */
  priced: Map<string, PricedBy>;
  close(): void;
}

export async function openShop(
  settings: Settings,
  env: Record<string, string | undefined> = process.env,
): Promise<OpenShop> {
  const onPostgres = selectsPostgres(settings.db);
  const db = openDb(onPostgres ? settings.contentIndexDb : settings.db);
  const scratch = openDb(":memory:");
  // The instructions the database holds. PostgreSQL is read with a bare client, never migrated here
  // (doctor and a start's checks change nothing); one not migrated yet holds none.
  const pricedInDb = async (source?: "api") => {
    if (!onPostgres) return pricedCids(db, source);
    const client = new SQL({ url: settings.db, max: 1 });
    try {
      return await pricedCidsOver(client, source);
    } catch (e) {
      if ((e as { errno?: string }).errno === "42P01") return new Map<string, PricedBy>(); // undefined_table
      throw new Error(`cannot read the PostgreSQL database ${displayUrl(settings.db)}: ${(e as Error).name}`);
    } finally {
      await client.close();
    }
  };
  try {
    const stores = createStores(db, settings);
    const indexed = await stores.content.index();
    const pricing = await createPricing({
      instructions: createInstructionStore(scratch, createCatalogChanges()),
      content: stores.content,
      settings,
      env,
    }).reload("check");
    const priced =
      pricing.result === "rejected"
        ? await pricedInDb()
        : new Map([...(await pricedInDb("api")), ...pricedCids(scratch, "files")]);
    return {
      db,
      pricing,
      unreadable: indexed.errors.map((e) => ({ path: e.path, message: e.message })),
      files: indexedFiles(db),
      priced,
      close: () => db.sqlite.close(),
    };
  } catch (e) {
    db.sqlite.close();
    throw e;
  } finally {
    scratch.sqlite.close();
  }
}
