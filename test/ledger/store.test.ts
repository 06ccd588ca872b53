import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { type Db, openDb } from "../../src/db/client";
import { createPaymentStore, type PaymentClaim, type SqlitePaymentStore } from "../../src/ledger/store";
import { claim } from "./claims";

let db: Db;
let payments: SqlitePaymentStore;
beforeEach(() => {
  db = openDb(":memory:");
  payments = createPaymentStore(db);
});
afterEach(() => db.sqlite.close());

describe("claims", () => {
  test("an authorization is claimed once; a second claim sees the pending row", () => {
    const c = claim();
    const first = payments.claim(c);
    expect(first.claimed).toBe(true);
    expect(first.payment.state).toBe("pending");
    const second = payments.claim({ ...c, cid: "other", proofHash: "b".repeat(64) });
    expect(second.claimed).toBe(false);
    expect(second.payment.id).toBe(first.payment.id);
    expect(second.payment.cid).toBe(c.cid);
  });

  test("the database itself refuses a second row for one authorization", () => {
    const c = claim();
    payments.claim(c);
    expect(() =>
      db.sqlite
        .query(
          "INSERT INTO payments (network, asset, payer, nonce, cid, instruction_id, instruction_version, amount, pay_to, state, valid_before, x402_version, proof_hash, created_at, updated_at) VALUES (?,?,?,?, 'c','i',1,'1','p','pending',1,1,'h','t','t')",
        )
        .run(c.network, c.asset, c.payer, c.nonce),
    ).toThrow(/UNIQUE/);
  });

  test("a settled authorization is never claimed again", () => {
    const c = claim();
    const { payment } = payments.claim(c);
    const settled = payments.markSettled(payment.id, `0x${"ab".repeat(32)}`);
    expect(settled?.state).toBe("settled");
    expect(settled?.txHash).toBe(`0x${"ab".repeat(32)}`);
    const again = payments.claim(c);
    expect(again.claimed).toBe(false);
    expect(again.payment.state).toBe("settled");
  });

  test("a failed (released) authorization can be claimed again, keeping one row", () => {
    const c = claim();
    const { payment } = payments.claim(c);
    expect(payments.markFailed(payment.id, "facilitator unreachable")?.state).toBe("failed");
    const again = payments.claim({ ...c, cid: "bafkreianother" });
    expect(again.claimed).toBe(true);
    expect(again.payment.id).toBe(payment.id);
    expect(again.payment.cid).toBe("bafkreianother");
    expect(again.payment.error).toBeNull();
    expect(db.sqlite.query("SELECT count(*) AS n FROM payments").get()).toEqual({ n: 1 });
  });

  test("only a pending row changes state (a late answer cannot flip a settled row)", () => {
    const { payment } = payments.claim(claim());
    payments.markSettled(payment.id, "0xaa");
    expect(payments.markFailed(payment.id, "late")).toBeFalsy();
    expect(payments.find(payment)?.state).toBe("settled");
  });

  test("a pending row from an interrupted settlement (older than staleBefore) can be claimed again", () => {
    const c = claim();
    const first = payments.claim(c);
    expect(payments.claim(c, { staleBefore: "2000-01-01T00:00:00.000Z" }).claimed).toBe(false);
    const later = new Date(Date.now() + 60_000).toISOString();
    const again = payments.claim(c, { staleBefore: later });
    expect(again.claimed).toBe(true);
    expect(again.payment.id).toBe(first.payment.id);
  });

  test("validBefore beyond JS numbers is clamped, not wrapped", () => {
    const { payment } = payments.claim(claim({ validBefore: 2n ** 200n }));
    expect(payment.validBefore).toBe(Number.MAX_SAFE_INTEGER);
  });

  test("findPaymentByProof finds a row by authorization and signature hash, whatever the asset", () => {
    const c = claim({ proofHash: "c".repeat(64) });
    payments.claim(c);
    expect(
      payments.findByProof({ network: c.network, payer: c.payer, nonce: c.nonce, proofHash: c.proofHash })?.nonce,
    ).toBe(c.nonce);
    expect(
      payments.findByProof({ network: c.network, payer: c.payer, nonce: c.nonce, proofHash: "d".repeat(64) }),
    ).toBeUndefined();
  });
});

describe("listing and totals", () => {
  test("keyset pages, newest first, cover every row once", () => {
    for (let i = 0; i < 7; i++) payments.claim(claim());
    const seen: number[] = [];
    let afterId: number | undefined;
    for (;;) {
      const page = payments.list({}, { limit: 3, afterId });
      seen.push(...page.items.map((p) => p.id));
      if (page.nextAfterId === undefined) break;
      afterId = page.nextAfterId;
    }
    expect(seen).toEqual([7, 6, 5, 4, 3, 2, 1]);
  });

  test("filters by cid, payer (any case), instruction, state and time", () => {
    const a = payments.claim(claim({ cid: "cidA", payer: "0xAbCdEf0000000000000000000000000000000001" })).payment;
    const b = payments.claim(claim({ cid: "cidB", instructionId: "other" })).payment;
    payments.markSettled(a.id, "0x01");
    expect(payments.list({ cid: "cidA" }, { limit: 10 }).items.map((p) => p.id)).toEqual([a.id]);
    expect(
      payments.list({ payer: "0xabcdef0000000000000000000000000000000001" }, { limit: 10 }).items.map((p) => p.id),
    ).toEqual([a.id]);
    expect(payments.list({ instructionId: "other" }, { limit: 10 }).items.map((p) => p.id)).toEqual([b.id]);
    expect(payments.list({ state: "pending" }, { limit: 10 }).items.map((p) => p.id)).toEqual([b.id]);
    expect(payments.list({ createdFrom: "2999-01-01T00:00:00.000Z" }, { limit: 10 }).items).toEqual([]);
    expect(payments.list({ createdTo: "2999-01-01T00:00:00.000Z" }, { limit: 10 }).items).toHaveLength(2);
  });

  test("totals sum settled payments per network and asset, exactly", () => {
    const usdc = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
    const other = "0x3333333333333333333333333333333333333333";
    const settle = (c: PaymentClaim) => payments.markSettled(payments.claim(c).payment.id, "0x01");
    settle(claim({ amount: "10000" }));
    settle(claim({ amount: "25000" }));
    settle(claim({ asset: other, amount: "5" }));
    settle(claim({ network: "base", amount: "7" }));
    payments.claim(claim({ amount: "999999" })); // pending: not revenue
    expect(payments.totals({})).toEqual([
      { network: "base", asset: usdc, amount: "7", count: 1 },
      { network: "base-sepolia", asset: usdc, amount: "35000", count: 2 },
      { network: "base-sepolia", asset: other, amount: "5", count: 1 },
    ]);
    expect(payments.totals({ state: "pending" })).toEqual([]);
  });

  test("totals past 64-bit integers stay exact", () => {
    const big = (2n ** 63n).toString();
    payments.markSettled(payments.claim(claim({ amount: big })).payment.id, "0x01");
    payments.markSettled(payments.claim(claim({ amount: big })).payment.id, "0x01");
    expect(payments.totals({})[0].amount).toBe((2n ** 64n).toString());
  });
});
