import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { type Db, openDb } from "../../src/db/client";
import { createPaymentStore, isUnconfirmed, type SqlitePaymentStore } from "../../src/ledger/store";
import { claim } from "./claims";

let db: Db;
let payments: SqlitePaymentStore;
beforeEach(() => {
  db = openDb(":memory:");
  payments = createPaymentStore(db);
});
afterEach(() => db.sqlite.close());

describe("an unconfirmed settlement (settle sent, outcome unknown)", () => {
  test("stays pending and is claimed only by the same proof for the same CID, to be resolved", () => {
    const c = claim();
    const { payment } = payments.claim(c);
    const kept = payments.markUnconfirmed(payment.id, "facilitator settle: no answer within 100 ms")!;
    expect(kept.state).toBe("pending");
    expect(kept.error).toBe("settlement unconfirmed: facilitator settle: no answer within 100 ms");
    expect(isUnconfirmed(kept)).toBe(true);

    // Another CID, or another signature over the same nonce: not theirs to claim (the money may have moved).
    expect(payments.claim({ ...c, cid: "bafkreianother" }).claimed).toBe(false);
    expect(payments.claim({ ...c, proofHash: "b".repeat(64) }).claimed).toBe(false);

    const again = payments.claim(c);
    expect(again).toMatchObject({ claimed: true, resolve: true });
    expect(again.payment.id).toBe(payment.id);
    // Live again: a concurrent claim sees a settlement in progress, not an unconfirmed one.
    expect(again.payment.error).toBeNull();
    expect(isUnconfirmed(again.payment)).toBe(false);
    expect(payments.claim(c).claimed).toBe(false);

    expect(payments.markSettled(payment.id, "0xaa")?.state).toBe("settled");
    expect(payments.claim(c).claimed).toBe(false);
  });

  test("a fresh claim and a released one are not resolutions; a stale pending row is", () => {
    const c = claim();
    expect(payments.claim(c)).toMatchObject({ claimed: true, resolve: false });
    const later = new Date(Date.now() + 60_000).toISOString();
    // Interrupted (the process stopped mid-settle): it may have been paid, so only the same proof resolves it.
    expect(payments.claim({ ...c, cid: "bafkreianother" }, { staleBefore: later }).claimed).toBe(false);
    expect(payments.claim(c, { staleBefore: later })).toMatchObject({ claimed: true, resolve: true });
    payments.markFailed(payments.find(c)!.id, "verify: insufficient_funds");
    expect(payments.claim({ ...c, cid: "bafkreianother" })).toMatchObject({ claimed: true, resolve: false });
  });

  test("only a pending row is marked unconfirmed", () => {
    const { payment } = payments.claim(claim());
    payments.markSettled(payment.id, "0xaa");
    expect(payments.markUnconfirmed(payment.id, "late")).toBeFalsy();
    expect(payments.find(payment)).toMatchObject({ state: "settled", error: null });
  });
});
