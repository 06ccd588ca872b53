import { describe, expect, test } from "bun:test";
import { getAddress } from "viem";
import { openDb } from "../../src/db/client";
import { createEntitlementStore } from "../../src/entitlements/store";
import { createPaymentStore } from "../../src/ledger/store";
import { CID_A, claim } from "../ledger/claims";

const CID_B = "bafkreidgvpkjawlxz6sffxzwgooowe5yt7i6wsyg236mfoks77nywkptdq";
const INSTRUCTION = "0190a000-0000-7000-8000-000000000001";
const OTHER_INSTRUCTION = "0190a000-0000-7000-8000-000000000002";
// The checksummed spelling, as stored.
const PAYER = getAddress("0xabcdef0123456789abcdef0123456789abcdef01");
const NOW = 1_800_000_000;

function setup() {
  const db = openDb(":memory:");
  const store = createEntitlementStore(db);
  const payments = createPaymentStore(db);
  /** A settled payment row, for the payment_id foreign key. */
  const paid = (over: Parameters<typeof claim>[0] = {}) => {
    const row = payments.claim(claim({ payer: PAYER, ...over })).payment;
    return payments.markSettled(row.id, `0x${"1".repeat(64)}`)!;
  };
  return { db, store, paid };
}

const count = (db: ReturnType<typeof openDb>) =>
  db.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM entitlements").get()!.n;

describe("entitlements store", () => {
  test("grantForPayment: forever never expires; a duration ends at now + duration; payer stored checksummed", () => {
    const { store, paid } = setup();
    const forever = store.grantForPayment({
      payer: PAYER.toLowerCase(),
      cid: CID_A,
      instructionId: INSTRUCTION,
      paymentId: paid().id,
      policy: { kind: "forever" },
      scope: "cid",
      nowSeconds: NOW,
    })!;
    expect(forever).toMatchObject({
      payer: PAYER,
      scope: "cid",
      cid: CID_A,
      instructionId: INSTRUCTION,
      source: "payment",
      expiresAt: null,
      revokedAt: null,
      grantedAt: new Date(NOW * 1000).toISOString(),
    });
    const month = store.grantForPayment({
      payer: PAYER,
      cid: CID_B,
      instructionId: INSTRUCTION,
      paymentId: paid({ cid: CID_B }).id,
      policy: { kind: "for", seconds: 30 * 86_400 },
      scope: "cid",
      nowSeconds: NOW,
    })!;
    expect(month.expiresAt).toBe(NOW + 30 * 86_400);
  });

  test("grantForPayment: once writes nothing", () => {
    const { db, store, paid } = setup();
    const none = store.grantForPayment({
      payer: PAYER,
      cid: CID_A,
      instructionId: INSTRUCTION,
      paymentId: paid().id,
      policy: { kind: "once" },
      scope: "cid",
      nowSeconds: NOW,
    });
    expect(none).toBeUndefined();
    expect(count(db)).toBe(0);
  });

  test("grantForPayment is idempotent per payment, also inside the caller's transaction", () => {
    const { db, store, paid } = setup();
    const paymentId = paid().id;
    const input = {
      payer: PAYER,
      cid: CID_A,
      instructionId: INSTRUCTION,
      paymentId,
      policy: { kind: "forever" } as const,
      scope: "cid" as const,
      nowSeconds: NOW,
    };
    const first = store.grantForPayment(input)!;
    // As the settler will call it: inside its own transaction on the same connection.
    const again = db.transaction(() => store.grantForPayment({ ...input, nowSeconds: NOW + 50 }));
    expect(again).toEqual(first);
    expect(count(db)).toBe(1);
  });

  test("grantForPayment rolls back with the caller's transaction", () => {
    const { db, store, paid } = setup();
    const paymentId = paid().id;
    expect(() =>
      db.transaction(() => {
        store.grantForPayment({
          payer: PAYER,
          cid: CID_A,
          instructionId: INSTRUCTION,
          paymentId,
          policy: { kind: "forever" },
          scope: "cid",
          nowSeconds: NOW,
        });
        throw new Error("settle failed");
      }),
    ).toThrow("settle failed");
    expect(count(db)).toBe(0);
  });

  test("active: any payer spelling; the CID for scope cid, every CID of the instruction for scope instruction", () => {
    const { store, paid } = setup();
    store.grantForPayment({
      payer: PAYER,
      cid: CID_A,
      instructionId: INSTRUCTION,
      paymentId: paid().id,
      policy: { kind: "forever" },
      scope: "cid",
      nowSeconds: NOW,
    });
    expect(store.active(PAYER.toLowerCase(), CID_A, INSTRUCTION, NOW)?.cid).toBe(CID_A);
    expect(store.active(PAYER.toUpperCase().replace("0X", "0x"), CID_A, INSTRUCTION, NOW)).toBeDefined();
    // Scope cid: another CID of the same instruction is not covered.
    expect(store.active(PAYER, CID_B, INSTRUCTION, NOW)).toBeUndefined();
    expect(store.active("0x2222222222222222222222222222222222222222", CID_A, INSTRUCTION, NOW)).toBeUndefined();
    expect(store.active("not an address", CID_A, INSTRUCTION, NOW)).toBeUndefined();

    const wide = store.grantForPayment({
      payer: PAYER,
      cid: CID_A,
      instructionId: OTHER_INSTRUCTION,
      paymentId: paid({ instructionId: OTHER_INSTRUCTION }).id,
      policy: { kind: "forever" },
      scope: "instruction",
      nowSeconds: NOW,
    })!;
    expect(wide.cid).toBeNull();
    expect(store.active(PAYER, CID_B, OTHER_INSTRUCTION, NOW)?.id).toBe(wide.id);
    expect(store.active(PAYER, CID_B, "0190a000-0000-7000-8000-000000000009", NOW)).toBeUndefined();
  });

  test("active: an expiry is the first second it no longer holds; a revoked one is gone", () => {
    const { store } = setup();
    const e = store.grant({ payer: PAYER, cid: CID_A, instructionId: INSTRUCTION, expiresAt: NOW + 60 }, NOW);
    expect(store.active(PAYER, CID_A, INSTRUCTION, NOW + 59)?.id).toBe(e.id);
    expect(store.active(PAYER, CID_A, INSTRUCTION, NOW + 60)).toBeUndefined();

    const forever = store.grant({ payer: PAYER, cid: CID_B, instructionId: INSTRUCTION }, NOW);
    expect(store.active(PAYER, CID_B, INSTRUCTION, NOW + 10 ** 9)?.id).toBe(forever.id);
    const revoked = store.revoke(forever.id, NOW + 5)!;
    expect(revoked.revokedAt).toBe(new Date((NOW + 5) * 1000).toISOString());
    expect(store.active(PAYER, CID_B, INSTRUCTION, NOW + 6)).toBeUndefined();
  });

  test("active prefers the longest-lasting entitlement", () => {
    const { store } = setup();
    store.grant({ payer: PAYER, cid: CID_A, instructionId: INSTRUCTION, expiresAt: NOW + 60 }, NOW);
    const never = store.grant({ payer: PAYER, instructionId: INSTRUCTION }, NOW);
    store.grant({ payer: PAYER, cid: CID_A, instructionId: INSTRUCTION, expiresAt: NOW + 600 }, NOW);
    expect(store.active(PAYER, CID_A, INSTRUCTION, NOW)?.id).toBe(never.id);
  });

  test("active picks the row the SQL ORDER BY (never first, latest expiry, newest) picks, on 300 random sets", () => {
    // The lookup sorts in JS (a SQLite sort cost ~25 us a request); this is the rule it replaced.
    const reference = `SELECT id FROM entitlements
        WHERE payer = ?1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?2)
          AND ((scope = 'cid' AND cid = ?3) OR (scope = 'instruction' AND instruction_id = ?4))
        ORDER BY expires_at IS NULL DESC, expires_at DESC, id DESC LIMIT 1`;
    const expiries = [null, NOW - 1, NOW, NOW + 1, NOW + 60, NOW + 600];
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(Math.random() * xs.length)];
    const { db, store } = setup();
    for (let round = 0; round < 300; round++) {
      db.sqlite.exec("DELETE FROM entitlements");
      const n = 1 + Math.floor(Math.random() * 6);
      for (let i = 0; i < n; i++) {
        const e = store.grant(
          {
            payer: pick([PAYER, getAddress("0x1111111111111111111111111111111111111111")]),
            cid: pick([CID_A, CID_B, undefined]),
            instructionId: pick([INSTRUCTION, OTHER_INSTRUCTION]),
            expiresAt: pick(expiries),
          },
          NOW,
        );
        if (Math.random() < 0.2) store.revoke(e.id, NOW);
      }
      const expected = db.sqlite
        .query<{ id: number }, [string, number, string, string]>(reference)
        .get(PAYER, NOW, CID_A, INSTRUCTION);
      expect({ round, id: store.active(PAYER, CID_A, INSTRUCTION, NOW)?.id }).toEqual({ round, id: expected?.id });
    }
    db.sqlite.close();
  });

  test("grant: scope cid with a CID, instruction without; source grant, the note kept", () => {
    const { store } = setup();
    const one = store.grant({ payer: PAYER.toLowerCase(), cid: CID_A, instructionId: INSTRUCTION, note: "gift" }, NOW);
    expect(one).toMatchObject({
      payer: PAYER,
      scope: "cid",
      cid: CID_A,
      source: "grant",
      paymentId: null,
      note: "gift",
    });
    const all = store.grant({ payer: PAYER, instructionId: INSTRUCTION }, NOW);
    expect(all).toMatchObject({ scope: "instruction", cid: null, expiresAt: null, note: null });
    expect(store.get(all.id)).toEqual(all);
    expect(store.get(999)).toBeUndefined();
  });

  test("revoke: twice keeps the first time; an unknown id is undefined", () => {
    const { store } = setup();
    const e = store.grant({ payer: PAYER, instructionId: INSTRUCTION }, NOW);
    const first = store.revoke(e.id, NOW + 1)!;
    const second = store.revoke(e.id, NOW + 100)!;
    expect(second.revokedAt).toBe(first.revokedAt);
    expect(store.revoke(12345, NOW)).toBeUndefined();
  });

  test("list: newest first, filters, active true and false, keyset pages", () => {
    const { store } = setup();
    const other = "0x2222222222222222222222222222222222222222";
    const a = store.grant({ payer: PAYER, cid: CID_A, instructionId: INSTRUCTION }, NOW);
    const b = store.grant({ payer: other, cid: CID_B, instructionId: INSTRUCTION, expiresAt: NOW + 10 }, NOW);
    const c = store.grant({ payer: PAYER, instructionId: OTHER_INSTRUCTION }, NOW);
    store.revoke(c.id, NOW);
    const ids = (f: Parameters<typeof store.list>[0]) => store.list(f, { limit: 100 }).items.map((e) => e.id);
    expect(ids({})).toEqual([c.id, b.id, a.id]);
    expect(ids({ payer: PAYER.toLowerCase() })).toEqual([c.id, a.id]);
    expect(ids({ cid: CID_B })).toEqual([b.id]);
    expect(ids({ instructionId: OTHER_INSTRUCTION })).toEqual([c.id]);
    expect(ids({ active: true, now: NOW })).toEqual([b.id, a.id]);
    expect(ids({ active: true, now: NOW + 10 })).toEqual([a.id]);
    expect(ids({ active: false, now: NOW + 10 })).toEqual([c.id, b.id]);
    expect(() => store.list({ active: true }, { limit: 1 })).toThrow();

    const first = store.list({}, { limit: 2 });
    expect(first.items.map((e) => e.id)).toEqual([c.id, b.id]);
    expect(first.nextAfterId).toBe(b.id);
    const second = store.list({}, { limit: 2, afterId: first.nextAfterId });
    expect(second.items.map((e) => e.id)).toEqual([a.id]);
    expect(second.nextAfterId).toBeUndefined();
  });
});
