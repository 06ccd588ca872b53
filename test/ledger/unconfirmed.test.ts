import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { isUnconfirmed, type PaymentStore } from "../../src/ledger/store";
import { claim } from "./claims";
import { LEDGER_ENGINES, type Ledger, openLedger } from "./ledger-db";

describe.each(LEDGER_ENGINES)("%s", (engine) => {
  let ledger: Ledger;
  let payments: PaymentStore;
  beforeEach(async () => {
    ledger = await openLedger(engine);
    payments = ledger.payments;
  });
  afterEach(() => ledger.close());

  describe("an unconfirmed settlement (settle sent, outcome unknown)", () => {
    test("stays pending and is claimed only by the same proof for the same CID, to be resolved", async () => {
      const c = claim();
      const { payment } = await payments.claim(c);
      const kept = (await payments.markUnconfirmed(payment.id, "facilitator settle: no answer within 100 ms"))!;
      expect(kept.state).toBe("pending");
      expect(kept.error).toBe("settlement unconfirmed: facilitator settle: no answer within 100 ms");
      expect(isUnconfirmed(kept)).toBe(true);

      // Another CID, or another signature over the same nonce: not theirs to claim (the money may have moved).
      expect((await payments.claim({ ...c, cid: "bafkreianother" })).claimed).toBe(false);
      expect((await payments.claim({ ...c, proofHash: "b".repeat(64) })).claimed).toBe(false);

      const again = await payments.claim(c);
      expect(again).toMatchObject({ claimed: true, resolve: true });
      expect(again.payment.id).toBe(payment.id);
      // Live again: a concurrent claim sees a settlement in progress, not an unconfirmed one.
      expect(again.payment.error).toBeNull();
      expect(isUnconfirmed(again.payment)).toBe(false);
      expect((await payments.claim(c)).claimed).toBe(false);

      expect((await payments.markSettled(payment.id, "0xaa"))?.state).toBe("settled");
      expect((await payments.claim(c)).claimed).toBe(false);
    });

    test("a fresh claim and a released one are not resolutions; a stale pending row is", async () => {
      const c = claim();
      expect(await payments.claim(c)).toMatchObject({ claimed: true, resolve: false });
      const later = new Date(Date.now() + 60_000).toISOString();
      // Interrupted (the process stopped mid-settle): it may have been paid, so only the same proof resolves it.
      expect((await payments.claim({ ...c, cid: "bafkreianother" }, { staleBefore: later })).claimed).toBe(false);
      expect(await payments.claim(c, { staleBefore: later })).toMatchObject({ claimed: true, resolve: true });
      await payments.markFailed((await payments.find(c))!.id, "verify: insufficient_funds");
      expect(await payments.claim({ ...c, cid: "bafkreianother" })).toMatchObject({ claimed: true, resolve: false });
    });

    test("only a pending row is marked unconfirmed", async () => {
      const { payment } = await payments.claim(claim());
      await payments.markSettled(payment.id, "0xaa");
      expect(await payments.markUnconfirmed(payment.id, "late")).toBeFalsy();
      expect(await payments.find(payment)).toMatchObject({ state: "settled", error: null });
    });
  });
});
