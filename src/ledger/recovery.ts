/**
 * Resolving an unconfirmed settlement: a settle that went out but whose
 * outcome never came back (timeout, lost answer, transaction not mined in
 * time). Its row was left pending, marked unconfirmed, and the same proof
 * for the same CID presented again lands here instead of being verified
 * afresh, which would fail on the spent nonce and leave a paying buyer
 * without the file.
 */
import type { AuthorizationFinding } from "../chain/authorization";
import { FacilitatorUnavailableError } from "../facilitator/types";
import { knownReason, Reason } from "../x402/reasons";
import { confirmSuccess } from "./chain-check";
import {
  claimOf,
  NOT_YET,
  notYetDetail,
  type Outcome,
  type PaymentAttempt,
  paid,
  type SettlerDeps,
  safeReason,
  unconfirmed,
  withDeadline,
} from "./outcome";
import type { Payment } from "./store";

/** Asks the chain about the row's authorization, bounded; undefined without an RPC for its network. */
function look(deps: SettlerDeps, row: Payment): Promise<AuthorizationFinding | undefined> | undefined {
  return deps.lookup && withDeadline(deps.lookup(row), deps.timeoutMs, "chain lookup");
}

/**
 * Never verified afresh (its nonce may be spent by our own settle): the
 * chain says whether it paid us, else the facilitator settles it again,
 * which joins a transaction it already sent or sends one (the token accepts
 * one use of the nonce, so there is never a second charge). The row is
 * released only when the authorization can no longer pay us.
 */
export async function resolveUnconfirmed(deps: SettlerDeps, attempt: PaymentAttempt, row: Payment): Promise<Outcome> {
  const refusedFinally = async (reason: string, detail: string): Promise<Outcome> => {
    await deps.payments.markFailed(row.id, detail);
    deps.log?.info(
      { cid: attempt.claim.cid, payer: attempt.claim.payer, reason: detail },
      "unconfirmed settlement resolved: not paid",
    );
    return { kind: "refused", reason, message: detail };
  };
  const conclude = (f: AuthorizationFinding | undefined): Promise<Outcome> | undefined => {
    if (f?.state === "paid") return paid(deps, attempt, row, f.txHash);
    if (f?.state === "spent") return refusedFinally(Reason.paymentAlreadyUsed, f.detail);
    if (f?.state === "unused" && f.chainTime >= row.validBefore)
      return refusedFinally(Reason.validBefore, "the authorization expired before it was settled");
    return undefined;
  };
  try {
    const first = await look(deps, row);
    const known = await conclude(first);
    if (known) return known;
    if (first?.state === "unknown") return unconfirmed(deps, attempt, row, first.detail, false);

    const settled = await withDeadline(deps.facilitator.settle(attempt.request), deps.timeoutMs, "settle");
    if (settled.success) return await confirmSuccess(deps, attempt, row, settled.transaction);
    const reason = knownReason(settled.errorReason, Reason.unexpectedSettleError);
    if (NOT_YET.has(reason)) return unconfirmed(deps, attempt, row, notYetDetail(reason, settled.transaction), true);
    // Refused now, perhaps because our earlier transaction has just used the nonce: look again.
    const after = await conclude(await look(deps, row));
    if (after) return after;
    await deps.payments.markUnconfirmed(row.id, `settle again: ${reason}`);
    return {
      kind: "refused",
      reason,
      message: "the payment could not be confirmed; present the same proof again later",
      held: true,
    };
  } catch (error) {
    // Library messages (an RPC error, say) go to the log and the row, not to the buyer.
    return error instanceof FacilitatorUnavailableError
      ? unconfirmed(deps, attempt, row, error.message, false)
      : unconfirmed(
          deps,
          attempt,
          row,
          `resolving: ${safeReason(error)}`,
          false,
          "the payment could not be confirmed yet",
        );
  }
}

/**
 * Another, earlier authorization of this payer for this file is still
 * pending (its settle may have landed; a stock client cannot present the
 * same proof again, it signs a new one). Before the new one is charged, the
 * chain says what became of the old: paid -> recorded (with its
 * entitlement) and the outcome is `paid`; unusable -> released, `refused`;
 * still open or no answer -> undefined: charge nothing yet. Without an RPC
 * nothing can be known: a row that went stale (its process is gone) no
 * longer holds the buyer back, and is left for an operator, `held`.
 */
export async function confirmHeld(
  deps: SettlerDeps,
  row: Payment,
  access: PaymentAttempt["access"],
  staleBefore: string,
): Promise<Outcome | undefined> {
  const attempt = { claim: claimOf(row), access };
  if (!deps.lookup) {
    if (row.updatedAt >= staleBefore) return undefined;
    deps.log?.warn(
      { cid: row.cid, payer: row.payer, row: row.id },
      "an unconfirmed payment could not be checked (no RPC): left pending",
    );
    return { kind: "refused", reason: Reason.paymentInProgress, message: "unconfirmed", held: true };
  }
  try {
    const f = await look(deps, row);
    if (f?.state === "paid") return paid(deps, attempt, row, f.txHash);
    if (f?.state === "spent" || (f?.state === "unused" && f.chainTime >= row.validBefore)) {
      await deps.payments.markFailed(
        row.id,
        f.state === "spent" ? f.detail : "the authorization expired before it was settled",
      );
      return {
        kind: "refused",
        reason: Reason.paymentAlreadyUsed,
        message: "the earlier authorization can no longer pay",
      };
    }
    return undefined;
  } catch (error) {
    deps.log?.warn(
      { cid: row.cid, payer: row.payer, reason: safeReason(error) },
      "an unconfirmed payment could not be checked",
    );
    return undefined;
  }
}
