/**
 * The app's stores over PostgreSQL (CIDGATE_DB=postgres://...): the same
 * `Stores` as the SQLite set (stores.ts), each store from its own `*-pg.ts`
 * beside the SQLite one. The content index stays per replica, in a local
 * SQLite file (CONTENT_INDEX_DB): each replica indexes its own content
 * folder, and a CID missing there answers 404 on that replica, never after a
 * charge.
 *
 * Other replicas' catalog writes are seen through the catalog_generation row
 * (moved by triggers, drizzle-pg/0003), polled in the background: the
 * catalog compares it as SQLite's data_version (db/changes.ts).
 */
import { createContentStore } from "./content/store";
import { pollCatalogGeneration } from "./db/catalog-generation-pg";
import { createCatalogChanges } from "./db/changes";
import type { Db } from "./db/client";
import type { Pg } from "./db/pg";
import { createPgSiwxNonceStore } from "./entitlements/siwx-nonces-pg";
import { createPgEntitlementStore } from "./entitlements/store-pg";
import { createPgInstructionStore } from "./instructions/store-pg";
import { createPgPaymentIdentifierStore } from "./ledger/payment-identifiers-pg";
import { createPgResolutionStore } from "./ledger/resolutions-pg";
import { createPgPaymentStore } from "./ledger/store-pg";
import { entitlementEvents } from "./notifications/hooks";
import { createPgNotificationStore } from "./notifications/store-pg";
import type { Settings } from "./settings";
import type { Stores } from "./stores";
import { createPgTokenStore } from "./tokens/store-pg";

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
  const generation = pollCatalogGeneration(pg);
  const changes = createCatalogChanges(generation.current);
  const notifications = createPgNotificationStore(pg);
  return {
    changes,
    instructions: createPgInstructionStore(pg, changes),
    content: createContentStore(options.local, options.settings, changes),
    payments: createPgPaymentStore(pg),
    entitlements: createPgEntitlementStore(pg, entitlementEvents(notifications)),
    paymentIdentifiers: createPgPaymentIdentifierStore(pg),
    siwxNonces: createPgSiwxNonceStore(pg),
    tokens: createPgTokenStore(pg),
    notifications,
    resolutions: createPgResolutionStore(pg),
    transaction: (fn) => pg.transaction(async () => fn()),
    ping: () => pg.sql`SELECT 1`,
    stop: () => generation.stop(),
  };
}
