/**
 * The ledger side of settlement (the chain side is the facilitator's,
 * src/facilitator/chain-settler.ts): claim -> verify -> settle -> record,
 * once per authorization.
 *
 * The ledger row is claimed before the facilitator hears of the proof, so a
 * proof is settled at most once even across restarts. Within the process,
 * requests carrying the same proof while it settles wait for that one
 * settlement (a promise per authorization) and share its outcome. What a
 * row held by someone else means for a request (served again, refused) is
 * not decided here: the outcome `existing` hands the row to the purchase
 * decision (src/gateway/purchase.ts), the one place that rule lives.
 *
 * Across processes (replicas on one PostgreSQL database, or processes on one
 * SQLite file) there is no shared map: a request whose claim finds the same
 * proof for the same CID being settled elsewhere watches the row until that
 * settlement ends, up to the facilitator timeout, and shares its outcome
 * through the row; still unsettled by then, it answers `pending`, never a
 * refusal to the buyer who paid.
 *
 * A settle that went out but whose outcome never came back may still land on
 * chain: its row is left pending, marked unconfirmed, for the same proof to
 * resolve (recovery.ts).
 */
import { FacilitatorUnavailableError, type SettleResponse } from "../facilitator/types";
import { knownReason, Reason } from "../x402/reasons";
import { afterRefusedSettle, confirmSuccess } from "./chain-check";
import {
  NOT_YET,
  notYetDetail,
  type Outcome,
  type PaymentAttempt,
  type SettlerDeps,
  safeReason,
  staleBeforeFor,
  unconfirmed,
  withDeadline,
} from "./outcome";
import { confirmHeld, resolveUnconfirmed } from "./recovery";
import { isUnconfirmed, type Payment } from "./store";

/**
 * How often a request watching another process's settlement of its proof reads the row (one read by
 * primary key). A settlement is a verify and a settle at the facilitator, hundreds of milliseconds
 * at best, seconds on a busy chain: 50 ms adds little to the wait and costs the database twenty
 * small reads a second per waiting request, which only a buyer's retry racing its own first
 * request makes.
 */
const WATCH_INTERVAL_MS = 50;

/** The answer to a proof whose settlement is still running elsewhere once the wait is over. */
const STILL_SETTLING: Outcome = { kind: "pending", message: "this payment is still being settled" };

export type { Outcome, PaymentAttempt, SettlerDeps, Timings } from "./outcome";

/** Creates the settler of one app: its in-flight map lives as long as the app. */
export function createLedgerSettler(deps: SettlerDeps) {
  // A pending row older than three bounded calls (the most a settlement or resolution makes) is from an interrupted process.
  const staleSince = staleBeforeFor(deps.timeoutMs);
  const inflight = new Map<string, { cid: string; proofHash: string; outcome: Promise<Outcome> }>();

  async function settle(attempt: PaymentAttempt, row: Payment): Promise<Outcome> {
    const { claim, request } = attempt;
    const t0 = performance.now();
    let t1 = t0;
    try {
      const verified = await withDeadline(deps.facilitator.verify(request), deps.timeoutMs, "verify");
      t1 = performance.now();
      if (!verified.isValid) {
        const reason = knownReason(verified.invalidReason, Reason.unexpectedVerifyError);
        await deps.payments.markFailed(row.id, `verify: ${reason}`);
        deps.log?.info({ cid: claim.cid, payer: claim.payer, reason }, "payment refused by the facilitator");
        return { kind: "refused", reason, message: "the facilitator refused the payment" };
      }
    } catch (error) {
      // Released: the settle was never sent, so the authorization was not spent.
      const message = error instanceof FacilitatorUnavailableError ? error.message : "facilitator error";
      deps.log?.warn({ cid: claim.cid, reason: safeReason(error) }, "payment not settled: facilitator unavailable");
      await deps.payments.markFailed(row.id, message);
      return { kind: "unavailable", message, released: true };
    }
    let settled: SettleResponse;
    try {
      settled = await withDeadline(deps.facilitator.settle(request), deps.timeoutMs, "settle");
    } catch (error) {
      // The settle request went out (or may have): whatever answer was lost, it may land on chain.
      return error instanceof FacilitatorUnavailableError
        ? unconfirmed(deps, attempt, row, error.message, false)
        : unconfirmed(deps, attempt, row, `facilitator settle: ${safeReason(error)}`, false, "facilitator error");
    }
    const timings = { verifyMs: t1 - t0, settleMs: performance.now() - t1 };
    if (settled.success) {
      try {
        return await confirmSuccess(deps, attempt, row, settled.transaction, timings);
      } catch (error) {
        // The money moved but the database would not take it (busy, disk full): keep the row for the
        // chain to resolve, never let it read as a claim in progress while the buyer pays again.
        deps.log?.error(
          { cid: attempt.claim.cid, payer: attempt.claim.payer, tx: settled.transaction, reason: safeReason(error) },
          "settled on chain but not recorded",
        );
        await Promise.resolve(
          deps.events?.moneyMovedWithoutSale(row, settled.transaction, "settled on chain but not recorded"),
        ).catch(
          () => undefined, // the database refused the sale; the log line above is what remains
        );
        return unconfirmed(
          deps,
          attempt,
          row,
          `recording: ${safeReason(error)}`,
          false,
          "the payment could not be recorded",
        );
      }
    }
    const reason = knownReason(settled.errorReason, Reason.unexpectedSettleError);
    if (NOT_YET.has(reason)) return unconfirmed(deps, attempt, row, notYetDetail(reason, settled.transaction), true);
    // A remote facilitator's refusal after the settle went out: the chain says whether money moved.
    const fromChain = await afterRefusedSettle(deps, attempt, row, reason, settled.transaction).catch((error) =>
      unconfirmed(deps, attempt, row, `settle answered ${reason}: ${safeReason(error)}`, false, "facilitator error"),
    );
    if (fromChain) return fromChain;
    await deps.payments.markFailed(row.id, `settle: ${reason}`);
    deps.log?.info({ cid: claim.cid, payer: claim.payer, reason }, "settlement failed");
    return { kind: "refused", reason, message: "the payment could not be settled" };
  }

  /**
   * The row once it is no longer a live settlement (settled, failed, gone, or unconfirmed: its settle
   * went unanswered), or as it is at `until` (unix ms).
   */
  async function watch(id: number, until: number): Promise<Payment | undefined> {
    for (;;) {
      const row = await deps.payments.get(id);
      if (row?.state !== "pending" || isUnconfirmed(row) || Date.now() >= until) return row;
      await Bun.sleep(Math.min(WATCH_INTERVAL_MS, Math.max(0, until - Date.now())));
    }
  }

  /**
   * Pays with a proof that passed the local checks. Never throws for a
   * facilitator problem: the outcome says what happened.
   */
  async function pay(attempt: PaymentAttempt): Promise<Outcome> {
    const { claim } = attempt;
    const mapKey = `${claim.network}|${claim.asset}|${claim.payer}|${claim.nonce}`;
    // Set once: however often another process's claims are watched and lost below, one timeout in all.
    let watchUntil: number | undefined;
    for (;;) {
      const running = inflight.get(mapKey);
      if (running) {
        const outcome = await running.outcome;
        if (running.cid === claim.cid && running.proofHash === claim.proofHash) {
          // Same proof, same content: the same answer, without a second charge.
          return outcome.kind === "paid" ? { ...outcome, newCharge: false, timings: undefined } : outcome;
        }
        continue; // someone else's attempt ended: look at the ledger again
      }
      const staleBefore = staleSince();
      const answer = deps.payments.claim(claim, { staleBefore });
      // SQLite answers at once: no await, so the outcome is registered before any other request runs. On
      // PostgreSQL the database's unique key decides between racing claims, this process's included.
      const claimed = answer instanceof Promise ? await answer : answer;
      if (!claimed.claimed) {
        const row = claimed.payment;
        const sameProof = row.cid === claim.cid && row.proofHash === claim.proofHash;
        if (row.state !== "pending" || !sameProof || isUnconfirmed(row, staleBefore))
          return { kind: "existing", payment: row };
        // Being settled now. Here (PostgreSQL: claims race across an await): join it at the loop's top.
        if (inflight.has(mapKey)) continue;
        // By another process: its outcome is in the row once it ends.
        watchUntil ??= Date.now() + deps.timeoutMs;
        const ended = await watch(row.id, watchUntil);
        if (ended?.state === "settled") return { kind: "existing", payment: ended };
        if (!ended || ended.state === "failed") continue; // released (or pruned): claimable again, as any failed row
        return STILL_SETTLING;
      }
      const outcome = claimed.resolve
        ? resolveUnconfirmed(deps, attempt, claimed.payment)
        : settle(attempt, claimed.payment);
      inflight.set(mapKey, { cid: claim.cid, proofHash: claim.proofHash, outcome });
      try {
        return await outcome;
      } finally {
        inflight.delete(mapKey);
      }
    }
  }

  return {
    pay,
    /** What became of this payer's earlier pending row for the same file (recovery.ts, `confirmHeld`). */
    confirmHeld: (row: Payment, access: PaymentAttempt["access"]) => confirmHeld(deps, row, access, staleSince()),
    inflightCount: () => inflight.size,
  };
}

export type LedgerSettler = ReturnType<typeof createLedgerSettler>;
