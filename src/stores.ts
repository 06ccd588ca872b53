/**
 * The app's stores over one database, sharing one catalog signal: made once
 * per app (src/server.ts, or createApp when none are given) and handed to
 * everything that reads or writes what the gateway sells. Two sets over one
 * database would each bump their own signal, and the catalog would miss the
 * other's writes (same-connection commits do not move `data_version`).
 */
import { type ContentStore, createContentStore } from "./content/store";
import type { MaybePromise } from "./db/awaitable";
import { type CatalogChanges, createCatalogChanges, sqliteDataVersion } from "./db/changes";
import type { Db } from "./db/client";
import { createSiwxNonceStore, type SiwxNonceStore, type SqliteSiwxNonceStore } from "./entitlements/siwx-nonces";
import { createEntitlementStore, type EntitlementStore, type SqliteEntitlementStore } from "./entitlements/store";
import { createInstructionStore, type InstructionStore, type SqliteInstructionStore } from "./instructions/store";
import {
  createPaymentIdentifierStore,
  type PaymentIdentifierStore,
  type SqlitePaymentIdentifierStore,
} from "./ledger/payment-identifiers";
import { createResolutionStore, type ResolutionStore, type SqliteResolutionStore } from "./ledger/resolutions";
import { createPaymentStore, type PaymentStore, type SqlitePaymentStore } from "./ledger/store";
import { entitlementEvents } from "./notifications/hooks";
import { createNotificationStore, type NotificationStore, type SqliteNotificationStore } from "./notifications/store";
import type { Settings } from "./settings";
import { createTokenStore, type SqliteTokenStore, type TokenStore } from "./tokens/store";

export interface Stores {
  changes: CatalogChanges;
  instructions: InstructionStore;
  content: ContentStore;
  /** The ledger: not part of the catalog, so its writes bump nothing. */
  payments: PaymentStore;
  /** Who may download what again: not part of the catalog either (an offer does not depend on the buyer). */
  entitlements: EntitlementStore;
  /** payment-identifier idempotency keys (ledger): no catalog signal either. */
  paymentIdentifiers: PaymentIdentifierStore;
  /** Used sign-in-with-x nonces: what keeps a sign-in single-use across processes. */
  siwxNonces: SiwxNonceStore;
  /** Management tokens: ids and revocations (read by auth on every management request). */
  tokens: TokenStore;
  /** Webhooks and their outbox: events are queued here in the writes they report, sent by the dispatcher. */
  notifications: NotificationStore;
  /** Operators' resolutions of pending payments (ledger audit trail). */
  resolutions: ResolutionStore;
  /**
   * Runs `fn` as one transaction over these stores (a settled payment, its entitlement and its
   * event). On SQLite `fn` must not await: bun:sqlite commits at the first await, so a promise
   * from it is refused (the SQLite stores answer synchronously, see db/awaitable.ts `then`).
   */
  transaction<T>(fn: () => MaybePromise<T>): MaybePromise<T>;
  /** A trivial query: is the database answering (readiness). */
  ping(): MaybePromise<unknown>;
}

/** The SQLite set: synchronous stores (a test that made them may read them without awaiting). */
export interface SqliteStores extends Stores {
  instructions: SqliteInstructionStore;
  payments: SqlitePaymentStore;
  entitlements: SqliteEntitlementStore;
  paymentIdentifiers: SqlitePaymentIdentifierStore;
  siwxNonces: SqliteSiwxNonceStore;
  tokens: SqliteTokenStore;
  notifications: SqliteNotificationStore;
  resolutions: SqliteResolutionStore;
}

export function createStores(db: Db, settings: Pick<Settings, "contentDir">): SqliteStores {
  const changes = createCatalogChanges(sqliteDataVersion(db.sqlite));
  const notifications = createNotificationStore(db);
  return {
    changes,
    instructions: createInstructionStore(db, changes),
    content: createContentStore(db, settings, changes),
    payments: createPaymentStore(db),
    entitlements: createEntitlementStore(db, entitlementEvents(notifications)),
    paymentIdentifiers: createPaymentIdentifierStore(db),
    siwxNonces: createSiwxNonceStore(db),
    tokens: createTokenStore(db),
    notifications,
    resolutions: createResolutionStore(db),
    transaction: (fn) =>
      db.sqlite.transaction(() => {
        const result = fn();
        if (result instanceof Promise) throw new Error("a SQLite transaction's callback must not await");
        return result;
      })(),
    ping: () => db.sqlite.query("SELECT 1").get(),
  };
}
