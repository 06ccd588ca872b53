import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { type Db, openDb } from "../../src/db/client";
import { isUnconfirmed, createPaymentStore } from "../../src/ledger/store";
import { claim } from "./claims";

let db: Db;
beforeEach(() => {
  db = openDb(":memory:");
});
afterEach(() => db.sqlite.close());

describe("an unconfirmed settlement (settle sent, outcome unknown)", () => {
  test("stays pending and is claimed only by the same proof for the same CID, to be resolved", () => {
    const c = claim();
    const { payment } = createPaymentStore(db).claim(c);
    const kept = createPaymentStore(db).markUnconfirmed(payment.id, "facilitator settle: no answer within 100 ms")!;
    expect(kept.state).toBe("pending");
    expect(kept.error).toBe("settlement unconfirmed: facilitator settle: no answer within 100 ms");
    expect(isUnconfirmed(kept)).toBe(true);

    // Another CID, or another signature over the same nonce: not theirs to claim (the money may have moved).
    expect(createPaymentStore(db).claim({ ...c, cid: "bafkreianother" }).claimed).toBe(false);
    expect(createPaymentStore(db).claim({ ...c, proofHash: "b".repeat(64) }).claimed).toBe(false);

    const again = createPaymentStore(db).claim(c);
    expect(again).toMatchObject({ claimed: true, resolve: true });
    expect(again.payment.id).toBe(payment.id);
    // Live again: a concurrent claim sees a settlement in progress, not an unconfirmed one.
    expect(again.payment.error).toBeNull();
    expect(isUnconfirmed(again.payment)).toBe(false);
    expect(createPaymentStore(db).claim(c).claimed).toBe(false);

    expect(createPaymentStore(db).markSettled(payment.id, "0xaa")?.state).toBe("settled");
    expect(createPaymentStore(db).claim(c).claimed).toBe(false);
  });

  test("a fresh claim and a released one are not resolutions; a stale pending row is", () => {
    const c = claim();
    expect(createPaymentStore(db).claim(c)).toMatchObject({ claimed: true, resolve: false });
    const later = new Date(Date.now() + 60_000).toISOString();
    // Interrupted (the process stopped mid-settle): it may have been paid, so only the same proof resolves it.
    expect(createPaymentStore(db).claim({ ...c, cid: "bafkreianother" }, { staleBefore: later }).claimed).toBe(false);
    expect(createPaymentStore(db).claim(c, { staleBefore: later })).toMatchObject({ claimed: true, resolve: true });
    createPaymentStore(db).markFailed(createPaymentStore(db).find(c)!.id, "verify: insufficient_funds");
    expect(createPaymentStore(db).claim({ ...c, cid: "bafkreianother" })).toMatchObject({ claimed: true, resolve: false });
  });

  test("only a pending row is marked unconfirmed", () => {
    const { payment } = createPaymentStore(db).claim(claim());
    createPaymentStore(db).markSettled(payment.id, "0xaa");
    expect(createPaymentStore(db).markUnconfirmed(payment.id, "late")).toBeFalsy();
    expect(createPaymentStore(db).find(payment)).toMatchObject({ state: "settled", error: null });
  });
});
