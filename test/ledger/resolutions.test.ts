/**
 * The resolutions store (src/ledger/resolutions.ts, resolutions-pg.ts): the
 * audit trail of what operators did to pending payments, on both engines.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { LEDGER_ENGINES, type Ledger, openLedger } from "./ledger-db";

describe.each(LEDGER_ENGINES)("%s", (engine) => {
  let ledger: Ledger;
  beforeEach(async () => {
    ledger = await openLedger(engine);
  });
  afterEach(() => ledger.close());

  test("a resolution is recorded as given, with its time, and read back oldest first per payment", async () => {
    const { resolutions } = ledger;
    const first = await resolutions.record({
      paymentId: 7,
      action: "check",
      outcome: "pending",
      basis: "chain",
      actor: "tok_1",
      note: "x".repeat(600),
    });
    expect(first).toMatchObject({
      paymentId: 7,
      action: "check",
      outcome: "pending",
      basis: "chain",
      txHash: null,
      actor: "tok_1",
    });
    expect(first.note).toBe("x".repeat(500)); // notes are cut at 500 characters
    expect(Number.isNaN(Date.parse(first.createdAt))).toBe(false);
    const second = await resolutions.record({
      paymentId: 7,
      action: "settle",
      outcome: "settled",
      basis: "operator",
      txHash: `0x${"ab".repeat(32)}`,
      actor: "tok_2",
    });
    expect(second.note).toBeNull();
    await resolutions.record({ paymentId: 8, action: "release", outcome: "failed", basis: "operator", actor: "tok_2" });
    expect(await resolutions.forPayment(7)).toEqual([first, second]);
    expect((await resolutions.forPayment(8)).map((r) => r.action)).toEqual(["release"]);
    expect(await resolutions.forPayment(9)).toEqual([]);
  });
});
