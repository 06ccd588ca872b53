/**
 * A proof being settled by another replica (issue 14): the request that
 * loses the claim watches the row and shares the winner's outcome, up to the
 * facilitator timeout, then answers `pending` — never a refusal to the buyer,
 * and never a second facilitator call while the first settlement runs.
 *
 * Replica A's settlement is played by hand on A's own store (the row claimed,
 * then settled or released); replica B is a real ledger settler over its own
 * connection to the same database. The facilitators are fault injectors,
 * named so: one that must not be reached, one that refuses at verify.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { FacilitatorUnavailableError } from "../../src/facilitator/types";
import { createLedgerSettler, type PaymentAttempt } from "../../src/ledger/settler";
import type { PaymentStore } from "../../src/ledger/store";
import type { FacilitatorRequest } from "../../src/x402/models";
import { claim } from "./claims";
import { LEDGER_ENGINES, type Ledger, openReplicas } from "./ledger-db";

/** Fault injector: a facilitator nobody should call here. Counts the calls that reach it. */
function unreachableFacilitator() {
  const calls = { verify: 0, settle: 0 };
  return {
    calls,
    async verify(): Promise<never> {
      calls.verify++;
      throw new FacilitatorUnavailableError("facilitator verify: unreachable (fault)");
    },
    async settle(): Promise<never> {
      calls.settle++;
      throw new FacilitatorUnavailableError("facilitator settle: unreachable (fault)");
    },
    supported: async () => ({ kinds: [], extensions: [], signers: {} }),
  };
}

/** Fault injector: a facilitator that refuses every proof at verify (the payer's balance is short). */
function refusingFacilitator() {
  const calls = { verify: 0, settle: 0 };
  return {
    calls,
    async verify() {
      calls.verify++;
      // The refusal takes a moment, as a real one does: long enough for a second request to join it.
      await Bun.sleep(50);
      return { isValid: false, invalidReason: "invalid_exact_evm_insufficient_balance" };
    },
    async settle(): Promise<never> {
      calls.settle++;
      throw new Error("settle after a refused verify");
    },
    supported: async () => ({ kinds: [], extensions: [], signers: {} }),
  };
}

/** B's store, telling when B's claim has been answered: from then on B is watching A's row. */
function signallingClaims(payments: PaymentStore) {
  let claimed!: () => void;
  const answered = new Promise<void>((resolve) => (claimed = resolve));
  const store: PaymentStore = {
    ...payments,
    claim: async (...args) => {
      const result = await payments.claim(...args);
      claimed();
      return result;
    },
  };
  return { store, answered };
}

const attemptOf = (c: ReturnType<typeof claim>): PaymentAttempt => ({
  claim: c,
  // Never read: these facilitators answer without looking at the request.
  request: {} as unknown as FacilitatorRequest,
});

describe.each(LEDGER_ENGINES)("%s", (engine) => {
  let a: Ledger;
  let b: Ledger;
  let close: () => Promise<void>;
  beforeEach(async () => {
    const opened = await openReplicas(engine, 2);
    [a, b] = opened.replicas;
    close = opened.close;
  }, 60_000); // the first one starts the test server
  afterEach(() => close());

  test("settled by the other replica while this one waits: its row, not a refusal, no facilitator call", async () => {
    const c = claim();
    const held = await a.payments.claim(c); // replica A is settling it
    expect(held.claimed).toBe(true);
    const facilitator = unreachableFacilitator();
    const { store, answered } = signallingClaims(b.payments);
    const settler = createLedgerSettler({ payments: store, facilitator, timeoutMs: 60_000 });

    const outcome = settler.pay(attemptOf(c));
    await answered;
    await a.payments.markSettled(held.payment.id, `0x${"ab".repeat(32)}`);

    expect(await outcome).toEqual({
      kind: "existing",
      payment: expect.objectContaining({ id: held.payment.id, state: "settled", txHash: `0x${"ab".repeat(32)}` }),
    });
    expect(facilitator.calls).toEqual({ verify: 0, settle: 0 });
  });

  test("still settling at the facilitator timeout: pending (a 503 to come back), the row left to its settler", async () => {
    const c = claim();
    const held = await a.payments.claim(c);
    const facilitator = unreachableFacilitator();
    const settler = createLedgerSettler({ payments: b.payments, facilitator, timeoutMs: 200 });

    expect(await settler.pay(attemptOf(c))).toEqual({
      kind: "pending",
      message: "this payment is still being settled",
    });
    expect(facilitator.calls).toEqual({ verify: 0, settle: 0 });
    expect(await a.payments.get(held.payment.id)).toMatchObject({ state: "pending", error: null });
  });

  test("released by the other replica while this one waits: claimed again and settled here", async () => {
    const c = claim();
    const held = await a.payments.claim(c);
    const facilitator = refusingFacilitator();
    const { store, answered } = signallingClaims(b.payments);
    const settler = createLedgerSettler({ payments: store, facilitator, timeoutMs: 60_000 });

    const outcome = settler.pay(attemptOf(c));
    await answered;
    await a.payments.markFailed(held.payment.id, "facilitator unreachable");

    // Not "paid for other content": this replica claimed the released row and asked the facilitator itself.
    expect(await outcome).toMatchObject({ kind: "refused", reason: "invalid_exact_evm_insufficient_balance" });
    expect(facilitator.calls).toEqual({ verify: 1, settle: 0 });
    expect(await a.payments.get(held.payment.id)).toMatchObject({
      state: "failed",
      error: "verify: invalid_exact_evm_insufficient_balance",
    });
  });

  test("another proof of the same authorization is not waited for: its row is answered at once", async () => {
    const c = claim();
    const held = await a.payments.claim(c);
    const facilitator = unreachableFacilitator();
    const settler = createLedgerSettler({ payments: b.payments, facilitator, timeoutMs: 60_000 });

    const other = await settler.pay(attemptOf({ ...c, proofHash: "b".repeat(64) }));
    expect(other).toEqual({
      kind: "existing",
      payment: expect.objectContaining({ id: held.payment.id, state: "pending" }),
    });
    const elsewhere = await settler.pay(attemptOf({ ...c, cid: "bafkreianother" }));
    expect(elsewhere).toEqual({ kind: "existing", payment: expect.objectContaining({ id: held.payment.id }) });
    expect(facilitator.calls).toEqual({ verify: 0, settle: 0 });
  });

  test("one proof presented twice at once to one replica: one facilitator call, one outcome for both", async () => {
    const c = claim();
    const facilitator = refusingFacilitator();
    const settler = createLedgerSettler({ payments: b.payments, facilitator, timeoutMs: 60_000 });
    const [first, second] = await Promise.all([settler.pay(attemptOf(c)), settler.pay(attemptOf(c))]);
    expect(first).toMatchObject({ kind: "refused", reason: "invalid_exact_evm_insufficient_balance" });
    expect(second).toEqual(first);
    expect(facilitator.calls.verify).toBe(1);
  });
});
