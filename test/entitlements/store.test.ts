/**
 * The entitlements store on both engines (SQLite, and a real PostgreSQL when
 * the machine has one): the same answers, ids and orders from each, and
 * `grantForPayment` joining the caller's transaction on each.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { getAddress } from "viem";
import type { MaybePromise } from "../../src/db/awaitable";
import { payments as pgPayments } from "../../src/db/schema-pg";
import { createEntitlementStore, type EntitlementStore } from "../../src/entitlements/store";
import { createPgEntitlementStore } from "../../src/entitlements/store-pg";
import { createPaymentStore } from "../../src/ledger/store";
import { CID_A, claim } from "../ledger/claims";
import { ENGINES, type EngineDb, openEngine } from "../support/engines";
import { pgAvailable } from "../support/postgres";

const CID_B = "bafkreidgvpkjawlxz6sffxzwgooowe5yt7i6wsyg236mfoks77nywkptdq";
const INSTRUCTION = "0190a000-0000-7000-8000-000000000001";
const OTHER_INSTRUCTION = "0190a000-0000-7000-8000-000000000002";
// The checksummed spelling, as stored.
const PAYER = getAddress("0xabcdef0123456789abcdef0123456789abcdef01");
const NOW = 1_800_000_000;

const skip = { sqlite: false, postgres: !(await pgAvailable("entitlements store")) };

/** The rule `active` implements in JS, as the SQL it replaced; ?1..?4 (SQLite) or $1..$4 (PostgreSQL). */
const reference = (p: (n: number) => string) => `SELECT id FROM entitlements
    WHERE payer = ${p(1)} AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ${p(2)})
      AND ((scope = 'cid' AND cid = ${p(3)}) OR (scope = 'instruction' AND instruction_id = ${p(4)}))
    ORDER BY expires_at IS NULL DESC, expires_at DESC, id DESC LIMIT 1`;

/** The store over one engine, and what the tests ask that engine directly. */
interface Setup {
  store: EntitlementStore;
  /** A settled payment row, for the payment_id foreign key. */
  paid(over?: Parameters<typeof claim>[0]): Promise<{ id: number }>;
  count(): Promise<number>;
  /** `fn` inside one transaction of the engine, as the settler calls the store. */
  transaction<T>(fn: () => MaybePromise<T>): Promise<T>;
  clear(): Promise<void>;
  /** The reference query's id for (payer, now, cid, instruction). */
  expected(payer: string, now: number, cid: string, instruction: string): Promise<number | undefined>;
}

function setupFor(db: EngineDb): Setup {
  if (db.engine === "sqlite") {
    const payments = createPaymentStore(db.sqlite);
    const sqlite = db.sqlite.sqlite;
    return {
      store: createEntitlementStore(db.sqlite),
      paid: async (over = {}) => {
        const row = payments.claim(claim({ payer: PAYER, ...over })).payment;
        return payments.markSettled(row.id, `0x${"1".repeat(64)}`)!;
      },
      count: async () => sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM entitlements").get()!.n,
      transaction: async (fn) =>
        sqlite.transaction(() => {
          const out = fn();
          if (out instanceof Promise) throw new Error("a SQLite transaction's callback must not await");
          return out;
        })(),
      clear: async () => {
        sqlite.exec("DELETE FROM entitlements");
      },
      expected: async (...args) =>
        sqlite.query<{ id: number }, [string, number, string, string]>(reference((n) => `?${n}`)).get(...args)?.id,
    };
  }
  const { pg } = db;
  return {
    store: createPgEntitlementStore(pg),
    paid: async (over = {}) => {
      const c = claim({ payer: PAYER, ...over });
      const now = new Date().toISOString();
      const [row] = await pg
        .q()
        .insert(pgPayments)
        .values({
          ...c,
          validBefore: Number(c.validBefore),
          state: "settled",
          txHash: `0x${"1".repeat(64)}`,
          createdAt: now,
          updatedAt: now,
        })
        .returning({ id: pgPayments.id });
      return row;
    },
    count: async () => (await pg.sql`SELECT count(*)::int AS n FROM entitlements`)[0].n,
    transaction: (fn) => pg.transaction(async () => fn()),
    clear: async () => {
      await pg.sql`DELETE FROM entitlements`;
    },
    expected: async (...args) => {
      const [row] = await pg.sql.unsafe(
        reference((n) => `$${n}`),
        args,
      );
      return row === undefined ? undefined : Number(row.id);
    },
  };
}

describe.each(ENGINES)("%s", (engine) => {
  describe.skipIf(skip[engine])("entitlements store", () => {
    let db: EngineDb;
    let s: Setup;
    let store: EntitlementStore;
    // A long bound: the first test of the process starts the PostgreSQL server, and bun kills what a
    // timed-out hook spawned.
    beforeEach(async () => {
      db = await openEngine(engine);
      s = setupFor(db);
      store = s.store;
    }, 60_000);
    afterEach(() => db.close());

    test("grantForPayment: forever never expires; a duration ends at now + duration; payer stored checksummed", async () => {
      const forever = (await store.grantForPayment({
        payer: PAYER.toLowerCase(),
        cid: CID_A,
        instructionId: INSTRUCTION,
        paymentId: (await s.paid()).id,
        policy: { kind: "forever" },
        scope: "cid",
        nowSeconds: NOW,
      }))!;
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
      const month = (await store.grantForPayment({
        payer: PAYER,
        cid: CID_B,
        instructionId: INSTRUCTION,
        paymentId: (await s.paid({ cid: CID_B })).id,
        policy: { kind: "for", seconds: 30 * 86_400 },
        scope: "cid",
        nowSeconds: NOW,
      }))!;
      expect(month.expiresAt).toBe(NOW + 30 * 86_400);
    });

    test("grantForPayment: once writes nothing", async () => {
      const none = await store.grantForPayment({
        payer: PAYER,
        cid: CID_A,
        instructionId: INSTRUCTION,
        paymentId: (await s.paid()).id,
        policy: { kind: "once" },
        scope: "cid",
        nowSeconds: NOW,
      });
      expect(none).toBeUndefined();
      expect(await s.count()).toBe(0);
    });

    test("grantForPayment is idempotent per payment, also inside the caller's transaction", async () => {
      const paymentId = (await s.paid()).id;
      const input = {
        payer: PAYER,
        cid: CID_A,
        instructionId: INSTRUCTION,
        paymentId,
        policy: { kind: "forever" } as const,
        scope: "cid" as const,
        nowSeconds: NOW,
      };
      const first = (await store.grantForPayment(input))!;
      // As the settler will call it: inside its own transaction.
      const again = await s.transaction(() => store.grantForPayment({ ...input, nowSeconds: NOW + 50 }));
      expect(again).toEqual(first);
      expect(await s.count()).toBe(1);
    });

    test("grantForPayment rolls back with the caller's transaction", async () => {
      const paymentId = (await s.paid()).id;
      const grant = () =>
        store.grantForPayment({
          payer: PAYER,
          cid: CID_A,
          instructionId: INSTRUCTION,
          paymentId,
          policy: { kind: "forever" },
          scope: "cid",
          nowSeconds: NOW,
        });
      const failed = s.transaction(() => {
        const granted = grant();
        if (granted instanceof Promise)
          return granted.then(() => {
            throw new Error("settle failed");
          });
        throw new Error("settle failed");
      });
      await expect(failed).rejects.toThrow("settle failed");
      expect(await s.count()).toBe(0);
    });

    test("active: any payer spelling; the CID for scope cid, every CID of the instruction for scope instruction", async () => {
      await store.grantForPayment({
        payer: PAYER,
        cid: CID_A,
        instructionId: INSTRUCTION,
        paymentId: (await s.paid()).id,
        policy: { kind: "forever" },
        scope: "cid",
        nowSeconds: NOW,
      });
      expect((await store.active(PAYER.toLowerCase(), CID_A, INSTRUCTION, NOW))?.cid).toBe(CID_A);
      expect(await store.active(PAYER.toUpperCase().replace("0X", "0x"), CID_A, INSTRUCTION, NOW)).toBeDefined();
      // Scope cid: another CID of the same instruction is not covered.
      expect(await store.active(PAYER, CID_B, INSTRUCTION, NOW)).toBeUndefined();
      expect(await store.active("0x2222222222222222222222222222222222222222", CID_A, INSTRUCTION, NOW)).toBeUndefined();
      expect(await store.active("not an address", CID_A, INSTRUCTION, NOW)).toBeUndefined();

      const wide = (await store.grantForPayment({
        payer: PAYER,
        cid: CID_A,
        instructionId: OTHER_INSTRUCTION,
        paymentId: (await s.paid({ instructionId: OTHER_INSTRUCTION })).id,
        policy: { kind: "forever" },
        scope: "instruction",
        nowSeconds: NOW,
      }))!;
      expect(wide.cid).toBeNull();
      expect((await store.active(PAYER, CID_B, OTHER_INSTRUCTION, NOW))?.id).toBe(wide.id);
      expect(await store.active(PAYER, CID_B, "0190a000-0000-7000-8000-000000000009", NOW)).toBeUndefined();
    });

    test("active: an expiry is the first second it no longer holds; a revoked one is gone", async () => {
      const e = await store.grant({ payer: PAYER, cid: CID_A, instructionId: INSTRUCTION, expiresAt: NOW + 60 }, NOW);
      expect((await store.active(PAYER, CID_A, INSTRUCTION, NOW + 59))?.id).toBe(e.id);
      expect(await store.active(PAYER, CID_A, INSTRUCTION, NOW + 60)).toBeUndefined();

      const forever = await store.grant({ payer: PAYER, cid: CID_B, instructionId: INSTRUCTION }, NOW);
      expect((await store.active(PAYER, CID_B, INSTRUCTION, NOW + 10 ** 9))?.id).toBe(forever.id);
      const revoked = (await store.revoke(forever.id, NOW + 5))!;
      expect(revoked.revokedAt).toBe(new Date((NOW + 5) * 1000).toISOString());
      expect(await store.active(PAYER, CID_B, INSTRUCTION, NOW + 6)).toBeUndefined();
    });

    test("active prefers the longest-lasting entitlement", async () => {
      await store.grant({ payer: PAYER, cid: CID_A, instructionId: INSTRUCTION, expiresAt: NOW + 60 }, NOW);
      const never = await store.grant({ payer: PAYER, instructionId: INSTRUCTION }, NOW);
      await store.grant({ payer: PAYER, cid: CID_A, instructionId: INSTRUCTION, expiresAt: NOW + 600 }, NOW);
      expect((await store.active(PAYER, CID_A, INSTRUCTION, NOW))?.id).toBe(never.id);
    });

    test("active picks the row the SQL ORDER BY (never first, latest expiry, newest) picks, on 300 random sets", async () => {
      // The lookup sorts in JS (a SQLite sort cost ~25 us a request); this is the rule it replaced.
      const expiries = [null, NOW - 1, NOW, NOW + 1, NOW + 60, NOW + 600];
      const pick = <T>(xs: readonly T[]) => xs[Math.floor(Math.random() * xs.length)];
      for (let round = 0; round < 300; round++) {
        await s.clear();
        const n = 1 + Math.floor(Math.random() * 6);
        for (let i = 0; i < n; i++) {
          const e = await store.grant(
            {
              payer: pick([PAYER, getAddress("0x1111111111111111111111111111111111111111")]),
              cid: pick([CID_A, CID_B, undefined]),
              instructionId: pick([INSTRUCTION, OTHER_INSTRUCTION]),
              expiresAt: pick(expiries),
            },
            NOW,
          );
          if (Math.random() < 0.2) await store.revoke(e.id, NOW);
        }
        const expected = await s.expected(PAYER, NOW, CID_A, INSTRUCTION);
        expect({ round, id: (await store.active(PAYER, CID_A, INSTRUCTION, NOW))?.id }).toEqual({
          round,
          id: expected,
        });
      }
    }, 60_000);

    test("grant: scope cid with a CID, instruction without; source grant, the note kept", async () => {
      const one = await store.grant(
        { payer: PAYER.toLowerCase(), cid: CID_A, instructionId: INSTRUCTION, note: "gift" },
        NOW,
      );
      expect(one).toMatchObject({
        payer: PAYER,
        scope: "cid",
        cid: CID_A,
        source: "grant",
        paymentId: null,
        note: "gift",
      });
      const all = await store.grant({ payer: PAYER, instructionId: INSTRUCTION }, NOW);
      expect(all).toMatchObject({ scope: "instruction", cid: null, expiresAt: null, note: null });
      expect(await store.get(all.id)).toEqual(all);
      expect(await store.get(999)).toBeUndefined();
    });

    test("revoke: twice keeps the first time; an unknown id is undefined", async () => {
      const e = await store.grant({ payer: PAYER, instructionId: INSTRUCTION }, NOW);
      const first = (await store.revoke(e.id, NOW + 1))!;
      const second = (await store.revoke(e.id, NOW + 100))!;
      expect(second.revokedAt).toBe(first.revokedAt);
      expect(await store.revoke(12345, NOW)).toBeUndefined();
    });

    test("list: newest first, filters, active true and false, keyset pages", async () => {
      const other = "0x2222222222222222222222222222222222222222";
      const a = await store.grant({ payer: PAYER, cid: CID_A, instructionId: INSTRUCTION }, NOW);
      const b = await store.grant({ payer: other, cid: CID_B, instructionId: INSTRUCTION, expiresAt: NOW + 10 }, NOW);
      const c = await store.grant({ payer: PAYER, instructionId: OTHER_INSTRUCTION }, NOW);
      await store.revoke(c.id, NOW);
      const ids = async (f: Parameters<typeof store.list>[0]) =>
        (await store.list(f, { limit: 100 })).items.map((e) => e.id);
      expect(await ids({})).toEqual([c.id, b.id, a.id]);
      expect(await ids({ payer: PAYER.toLowerCase() })).toEqual([c.id, a.id]);
      expect(await ids({ cid: CID_B })).toEqual([b.id]);
      expect(await ids({ instructionId: OTHER_INSTRUCTION })).toEqual([c.id]);
      expect(await ids({ active: true, now: NOW })).toEqual([b.id, a.id]);
      expect(await ids({ active: true, now: NOW + 10 })).toEqual([a.id]);
      expect(await ids({ active: false, now: NOW + 10 })).toEqual([c.id, b.id]);
      await expect((async () => store.list({ active: true }, { limit: 1 }))()).rejects.toThrow();

      const first = await store.list({}, { limit: 2 });
      expect(first.items.map((e) => e.id)).toEqual([c.id, b.id]);
      expect(first.nextAfterId).toBe(b.id);
      const second = await store.list({}, { limit: 2, afterId: first.nextAfterId });
      expect(second.items.map((e) => e.id)).toEqual([a.id]);
      expect(second.nextAfterId).toBeUndefined();
    });
  });
});
