/**
 * The ledger's webhook events are written with the ledger change, in its
 * transaction: one `payment.settled` per settled payment (none when the
 * settle transaction rolls back), and `payment.money_moved_without_sale`
 * when the chain took the money but the database would not record the sale,
 * which the dashboard's "needs attention" lists too.
 *
 * Fakes, named: the facilitator answers verify and settle without a chain
 * (what it says is what is under test here, not how it settles), and the
 * settle transaction is made to fail as a full disk would.
 */
import { describe, expect, test } from "bun:test";
import { createOverview } from "../../src/dashboard/overview";
import { openDb } from "../../src/db/client";
import type { Facilitator } from "../../src/facilitator/types";
import { createLedgerSettler } from "../../src/ledger/settler";
import { ledgerEvents } from "../../src/notifications/hooks";
import { loadSettings } from "../../src/settings";
import { createStores } from "../../src/stores";
import { claim } from "../ledger/claims";

const TX = `0x${"ab".repeat(32)}`;

/** FAKE facilitator: every payment verifies and settles in TX. */
const saysPaid: Facilitator = {
  verify: async () => ({ isValid: true, payer: "0x1111111111111111111111111111111111111111" }),
  settle: async () => ({ success: true, transaction: TX, network: "base-sepolia" }),
  supported: async () => ({ kinds: [] }),
};

function setup(transaction?: <T>(fn: () => T) => T) {
  const db = openDb(":memory:");
  const settings = loadSettings({ CIDGATE_DB: ":memory:" });
  const stores = createStores(db, settings);
  const hook = stores.notifications.createWebhook({ url: "http://127.0.0.1:9/hook" });
  const settler = createLedgerSettler({
    payments: stores.payments,
    entitlements: stores.entitlements,
    transaction: transaction ?? ((fn) => db.sqlite.transaction(fn)()),
    facilitator: saysPaid,
    timeoutMs: 5_000,
    events: ledgerEvents(stores.notifications),
  });
  const queued = () =>
    stores.notifications.listDeliveries({ webhookId: hook.id }, { limit: 100 }).items.map((d) => ({
      type: d.eventType,
      data: JSON.parse(d.payload).data,
    }));
  return { db, stores, settler, queued, settings };
}

const request = {} as never; // the fake facilitator does not read it

describe("ledger events", () => {
  test("a settled payment queues one payment.settled (and entitlement.granted) in its transaction", async () => {
    const { settler, queued } = setup();
    const c = claim();
    const outcome = await settler.pay({ claim: c, request, access: { policy: { kind: "forever" }, scope: "cid" } });
    expect(outcome.kind).toBe("paid");
    const events = queued().reverse();
    expect(events.map((e) => e.type)).toEqual(["payment.settled", "entitlement.granted"]);
    expect(events[0].data).toMatchObject({ cid: c.cid, payer: c.payer, amount: c.amount, transaction: TX });
    expect(events[0].data).not.toHaveProperty("nonce");
    // The same authorization again is the existing row: no second event.
    expect((await settler.pay({ claim: c, request })).kind).toBe("existing");
    expect(queued()).toHaveLength(2);
  });

  test("a settle transaction that rolls back leaves no event; the money moved: money_moved_without_sale, and needs attention", async () => {
    let db: ReturnType<typeof openDb> | undefined;
    const failing = <T>(fn: () => T): T =>
      db!.sqlite.transaction(() => {
        const out = fn(); // the row settled and its event queued...
        throw new Error("SQLITE_FULL: database or disk is full (injected)"); // ...then rolled back together
        // biome-ignore lint/correctness/noUnreachable: the type of what fn returns
        return out;
      })();
    const s = setup(failing);
    db = s.db;
    const c = claim({ cid: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy" });
    const outcome = await s.settler.pay({ claim: c, request });
    expect(outcome.kind).toBe("unavailable");
    const events = s.queued();
    expect(events.map((e) => e.type)).toEqual(["payment.money_moved_without_sale"]);
    expect(events[0].data).toMatchObject({
      transaction: TX,
      reason: "settled on chain but not recorded",
      amount: c.amount,
    });
    expect(s.stores.payments.list({}, { limit: 10 }).items[0].state).toBe("pending");

    const overview = await createOverview({ ...s.stores, settings: s.settings }).read();
    expect(overview.attention.money_moved_without_sale).toHaveLength(1);
    expect(overview.attention.money_moved_without_sale[0]).toMatchObject({ status: "money_moved", usd: "0.01" });
    expect(overview.attention.pending).toHaveLength(0);
    expect(overview.recent_payments[0].status).toBe("money_moved");
  });
});
