/**
 * What resolving pending payments from the chain needs, made once from a
 * database, its stores and the settings: the server's background
 * reconciliation and operator route (app.ts) and `cidgate payments resolve`
 * (cli/payments.ts) resolve with the same writes.
 */
import { ApiError } from "../http/errors";
import { ledgerEvents } from "../notifications/hooks";
import type { Settings } from "../settings";
import type { Stores } from "../stores";
import { chainReaders } from "./chain-lookup";
import type { SettlerDeps } from "./outcome";
import { accessOf } from "./reconcile";
import type { ResolveDeps } from "./resolve";

export function resolveDeps(
  stores: Pick<Stores, "payments" | "entitlements" | "instructions" | "notifications" | "resolutions" | "transaction">,
  settings: Settings,
  log: SettlerDeps["log"],
  lookup = chainReaders(settings)?.lookup,
): ResolveDeps {
  return {
    payments: stores.payments,
    entitlements: stores.entitlements,
    // The settled row and the entitlement it grants: one transaction.
    transaction: stores.transaction,
    log,
    timeoutMs: settings.facilitatorTimeoutMs,
    lookup,
    // A sale settled here (reconciled, or resolved by an operator) sends its payment.settled like any other.
    events: ledgerEvents(stores.notifications),
    resolutions: stores.resolutions,
    instructionAccess: async (id) => {
      try {
        return accessOf(await stores.instructions.get(id));
      } catch (error) {
        // Deleted: the payment stands, nothing more is granted. Anything else (a database that did not
        // answer) is thrown on: the row stays pending for the next round, never settled without its grant.
        if (error instanceof ApiError && error.status === 404) return undefined;
        throw error;
      }
    },
    // Every pending row, a live settlement's too: what the chain shows (paid, spent, expired) is final whoever
    // records it, and a row still open is left alone. So landed money waits one interval at most, even after
    // a kill -9 (a stale-row window would add three facilitator timeouts).
    pendingBefore: () => new Date().toISOString(),
  };
}
