/**
 * The payments store (src/ledger/store.ts on SQLite, src/ledger/store-pg.ts
 * on PostgreSQL): claims, state changes, the reconciliation's reads, listing
 * and totals, the same on both engines.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import type { PaymentClaim, PaymentStore } from "../../src/ledger/store";
import { claim } from "./claims";
import { countRows, LEDGER_ENGINES, type Ledger, openLedger } from "./ledger-db";

describe.each(LEDGER_ENGINES)("%s", (engine) => {
  let ledger: Ledger;
  let payments: PaymentStore;
  beforeEach(async () => {
    ledger = await openLedger(engine);
    payments = ledger.payments;
  });
  afterEach(() => ledger.close());

  describe("claims", () => {
    test("an authorization is claimed once; a second claim sees the pending row", async () => {
      const c = claim();
      const first = await payments.claim(c);
      expect(first.claimed).toBe(true);
      expect(first.payment.state).toBe("pending");
      const second = await payments.claim({ ...c, cid: "other", proofHash: "b".repeat(64) });
      expect(second.claimed).toBe(false);
      expect(second.payment.id).toBe(first.payment.id);
      expect(second.payment.cid).toBe(c.cid);
    });

    test("the database itself refuses a second row for one authorization", async () => {
      const c = claim();
      await payments.claim(c);
      await expect(
        ledger.raw(
          "INSERT INTO payments (network, asset, payer, nonce, cid, instruction_id, instruction_version, amount, pay_to, state, valid_before, x402_version, proof_hash, created_at, updated_at) VALUES (?,?,?,?, 'c','i',1,'1','p','pending',1,1,'h','t','t')",
          c.network,
          c.asset,
          c.payer,
          c.nonce,
        ),
      ).rejects.toThrow(/UNIQUE|unique constraint "payments_authorization"/);
    });

    test("a settled authorization is never claimed again", async () => {
      const c = claim();
      const { payment } = await payments.claim(c);
      const settled = await payments.markSettled(payment.id, `0x${"ab".repeat(32)}`);
      expect(settled?.state).toBe("settled");
      expect(settled?.txHash).toBe(`0x${"ab".repeat(32)}`);
      const again = await payments.claim(c);
      expect(again.claimed).toBe(false);
      expect(again.payment.state).toBe("settled");
    });

    test("a failed (released) authorization can be claimed again, keeping one row", async () => {
      const c = claim();
      const { payment } = await payments.claim(c);
      expect((await payments.markFailed(payment.id, "facilitator unreachable"))?.state).toBe("failed");
      const again = await payments.claim({ ...c, cid: "bafkreianother" });
      expect(again.claimed).toBe(true);
      expect(again.payment.id).toBe(payment.id);
      expect(again.payment.cid).toBe("bafkreianother");
      expect(again.payment.error).toBeNull();
      expect(await countRows(ledger, "payments")).toBe(1);
    });

    test("only a pending row changes state (a late answer cannot flip a settled row)", async () => {
      const { payment } = await payments.claim(claim());
      await payments.markSettled(payment.id, "0xaa");
      expect(await payments.markFailed(payment.id, "late")).toBeFalsy();
      expect((await payments.find(payment))?.state).toBe("settled");
    });

    test("a pending row from an interrupted settlement (older than staleBefore) can be claimed again", async () => {
      const c = claim();
      const first = await payments.claim(c);
      expect((await payments.claim(c, { staleBefore: "2000-01-01T00:00:00.000Z" })).claimed).toBe(false);
      const later = new Date(Date.now() + 60_000).toISOString();
      const again = await payments.claim(c, { staleBefore: later });
      expect(again.claimed).toBe(true);
      expect(again.payment.id).toBe(first.payment.id);
    });

    test("validBefore beyond JS numbers is clamped, not wrapped", async () => {
      const { payment } = await payments.claim(claim({ validBefore: 2n ** 200n }));
      expect(payment.validBefore).toBe(Number.MAX_SAFE_INTEGER);
    });

    test("findPaymentByProof finds a row by authorization and signature hash, whatever the asset", async () => {
      const c = claim({ proofHash: "c".repeat(64) });
      await payments.claim(c);
      expect(
        (await payments.findByProof({ network: c.network, payer: c.payer, nonce: c.nonce, proofHash: c.proofHash }))
          ?.nonce,
      ).toBe(c.nonce);
      expect(
        await payments.findByProof({ network: c.network, payer: c.payer, nonce: c.nonce, proofHash: "d".repeat(64) }),
      ).toBeUndefined();
    });

    test("a claimed row reads back the same by id, by authorization and as the payer's held row", async () => {
      const c = claim({ payer: "0x3333333333333333333333333333333333333333" });
      const { payment } = await payments.claim(c);
      expect(payment).toMatchObject({
        network: c.network,
        asset: c.asset,
        payer: c.payer,
        nonce: c.nonce,
        cid: c.cid,
        instructionId: c.instructionId,
        instructionVersion: 1,
        amount: "10000",
        payTo: c.payTo,
        state: "pending",
        txHash: null,
        validBefore: 2_000_000_000,
        x402Version: 1,
        proofHash: c.proofHash,
        error: null,
      });
      expect(payment.createdAt).toBe(payment.updatedAt);
      expect(await payments.get(payment.id)).toEqual(payment);
      expect(await payments.find(c)).toEqual(payment);
      expect(await payments.heldFor(c.payer, c.cid)).toEqual(payment);
      await payments.markSettled(payment.id, "0xaa");
      expect(await payments.heldFor(c.payer, c.cid)).toBeUndefined();
      expect(await payments.get(payment.id + 1000)).toBeUndefined();
    });
  });

  describe("what the reconciliation and the pruning read", () => {
    test("unresolved: unconfirmed and stale pending rows, oldest first, a page after an id", async () => {
      const live = (await payments.claim(claim())).payment;
      const unconfirmed: number[] = [];
      for (let i = 0; i < 5; i++) {
        const { payment } = await payments.claim(claim());
        await payments.markUnconfirmed(payment.id, "facilitator settle: no answer");
        unconfirmed.push(payment.id);
      }
      const settled = (await payments.claim(claim())).payment;
      await payments.markSettled(settled.id, "0x01");
      const past = "2000-01-01T00:00:00.000Z";
      expect((await payments.unresolved(past)).map((p) => p.id)).toEqual(unconfirmed);
      expect((await payments.unresolved(past, 2)).map((p) => p.id)).toEqual(unconfirmed.slice(0, 2));
      expect((await payments.unresolved(past, 2, unconfirmed[1])).map((p) => p.id)).toEqual(unconfirmed.slice(2, 4));
      // Everything pending was last touched before a time in the future: the live claim too, never the settled row.
      const future = new Date(Date.now() + 60_000).toISOString();
      expect((await payments.unresolved(future)).map((p) => p.id)).toEqual([live.id, ...unconfirmed]);
    });

    test("a row released after its settle is looked at while it could land, and settled if it did", async () => {
      const nowSeconds = Math.floor(Date.now() / 1000);
      const open = (await payments.claim(claim({ validBefore: BigInt(nowSeconds + 60) }))).payment;
      const expired = (await payments.claim(claim({ validBefore: BigInt(nowSeconds - 3600) }))).payment;
      const atVerify = (await payments.claim(claim())).payment;
      await payments.markFailed(open.id, "settle: invalid_transaction_state");
      await payments.markFailed(expired.id, "settle: invalid_transaction_state");
      await payments.markFailed(atVerify.id, "verify: insufficient_funds");
      expect((await payments.releasedAfterSettle(nowSeconds)).map((p) => p.id)).toEqual([open.id]);
      expect((await payments.releasedAfterSettle(nowSeconds, 7200)).map((p) => p.id)).toEqual([open.id, expired.id]);
      expect(await payments.settleReleased(open.id, "0xbb")).toMatchObject({
        state: "settled",
        txHash: "0xbb",
        error: null,
      });
      // Only a released row: settled already, it is not settled again.
      expect(await payments.settleReleased(open.id, "0xcc")).toBeUndefined();
      expect((await payments.get(open.id))?.txHash).toBe("0xbb");
    });

    test("pruning deletes only rows refused at verify, last touched before the cutoff, up to the limit", async () => {
      const refused: number[] = [];
      for (let i = 0; i < 3; i++) {
        const { payment } = await payments.claim(claim());
        await payments.markFailed(payment.id, "verify: insufficient_funds");
        refused.push(payment.id);
      }
      const settleRefused = (await payments.claim(claim())).payment;
      await payments.markFailed(settleRefused.id, "settle: invalid_transaction_state");
      const pending = (await payments.claim(claim())).payment;
      const future = new Date(Date.now() + 60_000).toISOString();
      expect(await payments.pruneRefusedAtVerify("2000-01-01T00:00:00.000Z")).toBe(0);
      expect(await payments.pruneRefusedAtVerify(future, 2)).toBe(2);
      expect(await payments.pruneRefusedAtVerify(future)).toBe(1);
      for (const id of refused) expect(await payments.get(id)).toBeUndefined();
      expect((await payments.get(settleRefused.id))?.state).toBe("failed");
      expect((await payments.get(pending.id))?.state).toBe("pending");
    });
  });

  describe("listing and totals", () => {
    test("keyset pages, newest first, cover every row once", async () => {
      for (let i = 0; i < 7; i++) await payments.claim(claim());
      const seen: number[] = [];
      let afterId: number | undefined;
      for (;;) {
        const page = await payments.list({}, { limit: 3, afterId });
        seen.push(...page.items.map((p) => p.id));
        if (page.nextAfterId === undefined) break;
        afterId = page.nextAfterId;
      }
      expect(seen).toEqual([7, 6, 5, 4, 3, 2, 1]);
    });

    test("filters by cid, payer (any case), instruction, state and time", async () => {
      const a = (await payments.claim(claim({ cid: "cidA", payer: "0xAbCdEf0000000000000000000000000000000001" })))
        .payment;
      const b = (await payments.claim(claim({ cid: "cidB", instructionId: "other" }))).payment;
      await payments.markSettled(a.id, "0x01");
      const ids = async (f: Parameters<PaymentStore["list"]>[0]) =>
        (await payments.list(f, { limit: 10 })).items.map((p) => p.id);
      expect(await ids({ cid: "cidA" })).toEqual([a.id]);
      expect(await ids({ payer: "0xabcdef0000000000000000000000000000000001" })).toEqual([a.id]);
      expect(await ids({ instructionId: "other" })).toEqual([b.id]);
      expect(await ids({ state: "pending" })).toEqual([b.id]);
      expect(await ids({ createdFrom: "2999-01-01T00:00:00.000Z" })).toEqual([]);
      expect(await ids({ createdTo: "2999-01-01T00:00:00.000Z" })).toHaveLength(2);
    });

    test("totals sum settled payments per network and asset, exactly", async () => {
      const usdc = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
      const other = "0x3333333333333333333333333333333333333333";
      const settle = async (c: PaymentClaim) => payments.markSettled((await payments.claim(c)).payment.id, "0x01");
      await settle(claim({ amount: "10000" }));
      await settle(claim({ amount: "25000" }));
      await settle(claim({ asset: other, amount: "5" }));
      await settle(claim({ network: "base", amount: "7" }));
      await payments.claim(claim({ amount: "999999" })); // pending: not revenue
      const expected = [
        { network: "base", asset: usdc, amount: "7", count: 1 },
        { network: "base-sepolia", asset: usdc, amount: "35000", count: 2 },
        { network: "base-sepolia", asset: other, amount: "5", count: 1 },
      ];
      expect(await payments.totals({})).toEqual(expected);
      // A payer filter sums the ledger itself rather than the rollups: the same figures.
      expect(await payments.totals({ payer: claim().payer.toLowerCase() })).toEqual(expected);
      expect(await payments.totals({ state: "pending" })).toEqual([]);
    });

    test("totals past 64-bit integers stay exact", async () => {
      const big = (2n ** 63n).toString();
      await payments.markSettled((await payments.claim(claim({ amount: big }))).payment.id, "0x01");
      await payments.markSettled((await payments.claim(claim({ amount: big }))).payment.id, "0x01");
      expect((await payments.totals({}))[0].amount).toBe((2n ** 64n).toString());
      expect((await payments.totals({ cid: claim().cid }))[0].amount).toBe((2n ** 64n).toString());
    });
  });
});
