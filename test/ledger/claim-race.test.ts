/**
 * Every payment settled exactly once across replicas (issue 14): claims of
 * one authorization racing from two replicas (two connection pools to one
 * PostgreSQL database, or two connections to one SQLite file) claim it once,
 * whether the row is new, released (failed) or unconfirmed.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import type { ClaimResult, PaymentClaim } from "../../src/ledger/store";
import { claim } from "./claims";
import { countRows, LEDGER_ENGINES, type Ledger, openReplicas } from "./ledger-db";

/** 50 claims at once, alternating between the two replicas; `vary` makes each claimant's claim its own. */
function race(replicas: Ledger[], c: PaymentClaim, vary: (c: PaymentClaim, i: number) => PaymentClaim = (x) => x) {
  return Promise.all(
    Array.from({ length: 50 }, (_, i) => replicas[i % 2].payments.claim(vary(c, i)) as Promise<ClaimResult>),
  );
}

describe.each(LEDGER_ENGINES)("%s", (engine) => {
  let replicas: Ledger[];
  let close: () => Promise<void>;
  beforeEach(async () => {
    const opened = await openReplicas(engine, 2);
    replicas = opened.replicas;
    close = opened.close;
  }, 60_000); // the first one starts the test server
  afterEach(() => close());

  test("50 concurrent claims of a new authorization from two replicas: exactly one claims it", async () => {
    const c = claim();
    const results = await race(replicas, c);
    const won = results.filter((r) => r.claimed);
    expect(won).toHaveLength(1);
    expect(new Set(results.map((r) => r.payment.id))).toEqual(new Set([won[0].payment.id]));
    expect(results.filter((r) => !r.claimed).every((r) => r.payment.state === "pending")).toBe(true);
    expect(await countRows(replicas[0], "payments")).toBe(1);
  });

  test("a released authorization claimed again by 50 claimants with other CIDs: one wins, the row is its", async () => {
    const c = claim();
    const { payment } = await replicas[0].payments.claim(c);
    await replicas[0].payments.markFailed(payment.id, "verify: insufficient_funds");
    const results = await race(replicas, c, (x, i) => ({ ...x, cid: `bafk-claimant-${i}` }));
    const won = results.filter((r) => r.claimed);
    expect(won).toHaveLength(1);
    const row = await replicas[1].payments.get(payment.id);
    expect(row).toMatchObject({ state: "pending", cid: won[0].payment.cid, error: null });
    expect(await countRows(replicas[0], "payments")).toBe(1);
  });

  test("an unconfirmed settlement resolved by 50 presentations of its proof at once: one resolves it", async () => {
    const c = claim();
    const { payment } = await replicas[0].payments.claim(c);
    await replicas[0].payments.markUnconfirmed(payment.id, "facilitator settle: no answer");
    const results = await race(replicas, c);
    expect(results.filter((r) => r.claimed)).toEqual([{ claimed: true, resolve: true, payment: expect.anything() }]);
    expect(results.filter((r) => !r.claimed).every((r) => r.payment.error === null)).toBe(true);
  });
});
