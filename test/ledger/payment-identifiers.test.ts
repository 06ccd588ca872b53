/**
 * The payment_identifiers store (src/ledger/payment-identifiers.ts, and
 * payment-identifiers-pg.ts on PostgreSQL): new, same, conflict; the payment
 * attached; and the same answers from a second connection to the database
 * (another process, another replica).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import type { PaymentIdentifierStore } from "../../src/ledger/payment-identifiers";
import { LEDGER_ENGINES, type Ledger, openReplicas } from "./ledger-db";

const ID = "pay_7d5d747be160e280504c099d984bcfe0";
const NOW = "2026-11-23T01:00:00.000Z";

describe.each(LEDGER_ENGINES)("%s", (engine) => {
  let one: Ledger;
  let two: Ledger; // stands for another process (or replica) on the same database
  let close: () => Promise<void>;

  beforeEach(async () => {
    const opened = await openReplicas(engine, 2);
    [one, two] = opened.replicas;
    close = opened.close;
  }, 60_000); // the first one starts the test server
  afterEach(() => close());

  test("new, then the same payload is the same request, another payload a conflict", async () => {
    const ids: PaymentIdentifierStore = one.paymentIdentifiers;
    expect(await ids.remember(ID, "hash-a", NOW)).toEqual({ kind: "new" });
    expect(await ids.remember(ID, "hash-a", NOW)).toEqual({ kind: "same", paymentId: null });
    expect(await ids.remember(ID, "hash-b", NOW)).toEqual({ kind: "conflict" });
    await ids.attach(ID, 42);
    expect(await ids.remember(ID, "hash-a", NOW)).toEqual({ kind: "same", paymentId: 42 });
    expect(await ids.remember(ID, "hash-b", NOW)).toEqual({ kind: "conflict" });
    expect(await ids.find(ID)).toEqual({ id: ID, payloadHash: "hash-a", paymentId: 42, createdAt: NOW });
    expect(await ids.find("pay_unknown_unknown_")).toBeUndefined();
    // Another id is its own request.
    expect(await ids.remember(`${ID}x`, "hash-b", NOW)).toEqual({ kind: "new" });
  });

  test("two store instances on one database agree: only one of them sees the id as new", async () => {
    const a = one.paymentIdentifiers;
    const b = two.paymentIdentifiers;
    const results = await Promise.all([a.remember(ID, "hash-a", NOW), b.remember(ID, "hash-a", NOW)]);
    expect(results.filter((r) => r.kind === "new")).toHaveLength(1);
    expect(results.filter((r) => r.kind === "same")).toHaveLength(1);
    expect(await b.remember(ID, "hash-b", NOW)).toEqual({ kind: "conflict" });
    await a.attach(ID, 7);
    expect(await b.remember(ID, "hash-a", NOW)).toEqual({ kind: "same", paymentId: 7 });
    expect((await b.find(ID))?.paymentId).toBe(7);
  });

  test("attach on an unknown id writes nothing", async () => {
    const ids = one.paymentIdentifiers;
    await ids.attach("pay_nobody_nobody_nobody", 1);
    expect(await ids.find("pay_nobody_nobody_nobody")).toBeUndefined();
  });

  test("release frees an id whose request moved no money, and only that: not another payload's, not a paid one", async () => {
    const ids = one.paymentIdentifiers;
    expect(await ids.remember(ID, "hash-a", NOW)).toEqual({ kind: "new" });
    await ids.release(ID, "hash-b"); // not the payload it was remembered with: kept
    expect(await ids.remember(ID, "hash-b", NOW)).toEqual({ kind: "conflict" });
    await ids.release(ID, "hash-a");
    expect(await ids.find(ID)).toBeUndefined();
    expect(await ids.remember(ID, "hash-b", NOW)).toEqual({ kind: "new" }); // a corrected payment may use it
    await ids.attach(ID, 9);
    await ids.release(ID, "hash-b"); // it paid: never forgotten
    expect(await ids.remember(ID, "hash-c", NOW)).toEqual({ kind: "conflict" });
    expect((await ids.find(ID))?.paymentId).toBe(9);
  });
});
