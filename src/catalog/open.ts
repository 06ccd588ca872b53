/**
 * The shop as the server would serve it, for commands and start-up checks:
 * opens CIDGATE_DB, brings the content index up to date and applies the
 * pricing files, exactly as a server start does (the same stores, the only
 * writers of their tables), then hands the database over. A rejected pricing
 * reload changes nothing; its report says why.
 */
import { type Db, openDb } from "../db/client";
import { createPricing, type ReloadReport } from "../pricing/service";
import type { Settings } from "../settings";
import { createStores, type Stores } from "../stores";

export interface OpenShop {
  db: Db;
  stores: Stores;
  /** The pricing reload just made: files read, result, errors. */
  pricing: ReloadReport;
  /** Content files that could not be read (path and why). */
  unreadable: { path: string; message: string }[];
  close(): void;
}

export async function openShop(
  settings: Settings,
  env: Record<string, string | undefined> = process.env,
): Promise<OpenShop> {
  const db = openDb(settings.db);
  try {
    const stores = createStores(db, settings);
    const indexed = await stores.content.index();
    const pricing = createPricing({ instructions: stores.instructions, content: stores.content, settings, env }).reload(
      "check",
    );
    return {
      db,
      stores,
      pricing,
      unreadable: indexed.errors.map((e) => ({ path: e.path, message: e.message })),
      close: () => db.sqlite.close(),
    };
  } catch (e) {
    db.sqlite.close();
    throw e;
  }
}
