/**
 * The app's stores over one database, sharing one catalog signal: made once
 * per app (src/server.ts, or createApp when none are given) and handed to
 * everything that reads or writes what the gateway sells. Two sets over one
 * database would each bump their own signal, and the catalog would miss the
 * other's writes (same-connection commits do not move `data_version`).
 */
import { type ContentStore, createContentStore } from "./content/store";
import { type CatalogChanges, createCatalogChanges } from "./db/changes";
import type { Db } from "./db/client";
import { createSiwxNonceStore, type SiwxNonceStore } from "./entitlements/siwx-nonces";
import { createEntitlementStore, type EntitlementStore } from "./entitlements/store";
import { createInstructionStore, type InstructionStore } from "./instructions/store";
import { createPaymentIdentifierStore, type PaymentIdentifierStore } from "./ledger/payment-identifiers";
import { createPaymentStore, type PaymentStore } from "./ledger/store";
import { entitlementEvents } from "./notifications/hooks";
import { createNotificationStore, type NotificationStore } from "./notifications/store";
import type { Settings } from "./settings";
import { createTokenStore, type TokenStore } from "./tokens/store";

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
}

export function createStores(db: Db, settings: Pick<Settings, "contentDir">): Stores {
  const changes = createCatalogChanges();
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
  };
}
