/**
 * Background reconciliation pages through the pending rows: rows the chain
 * cannot decide yet stay pending, and 500 of them must not hide a newer row
 * that has landed. The chain lookup here is a fault injector (an RPC whose
 * log search never finds the older transactions), named as such; the ledger,
 * the entitlement grant and the transaction are the real ones.
 */
import { afterEach, expect, test } from "bun:test";
import type { AuthorizationFinding } from "../../src/chain/authorization";
import { type Db, openDb } from "../../src/db/client";
import { createLogger } from "../../src/http/logging";
import { createReconciler } from "../../src/ledger/reconcile";
import { resolveDeps } from "../../src/ledger/resolve-deps";
import type { Payment } from "../../src/ledger/store";
import { loadSettings } from "../../src/settings";
import { createStores } from "../../src/stores";
import { claim } from "./claims";

let db: Db | undefined;
afterEach(() => db?.sqlite.close());

test("a landed payment behind 500 undecidable pending rows is settled within two rounds", async () => {
  db = openDb(":memory:");
  const settings = loadSettings({ CIDGATE_DB: ":memory:", PAY_TO: "0x2222222222222222222222222222222222222222" });
  const stores = createStores(db, settings);
  const rows: Payment[] = [];
  for (let i = 0; i < 501; i++) {
    const { payment } = stores.payments.claim(claim());
    rows.push(stores.payments.markUnconfirmed(payment.id, "facilitator settle: no answer")!);
  }
  const newest = rows[rows.length - 1];
  const landed = `0x${"ab".repeat(32)}` as const;
  // Fault injector: every older authorization is used, but its transaction is never found.
  const unsearchableRpc = async (row: Payment): Promise<AuthorizationFinding> =>
    row.id === newest.id ? { state: "paid", txHash: landed } : { state: "unknown", detail: "not found (fault)" };
  const reconciler = createReconciler({
    ...resolveDeps(stores, settings, createLogger("silent"), unsearchableRpc),
    intervalSeconds: 3600,
  });

  const first = await reconciler.runOnce();
  expect(first).toMatchObject({ checked: 500, settled: 0, open: 500 });
  expect(stores.payments.get(newest.id)?.state).toBe("pending");

  const second = await reconciler.runOnce();
  expect(second).toMatchObject({ settled: 1 });
  expect(stores.payments.get(newest.id)).toMatchObject({ state: "settled", txHash: landed });
  // The older rows are still open for the chain to decide later; none was released on a guess.
  expect(stores.payments.get(rows[0].id)?.state).toBe("pending");
});
