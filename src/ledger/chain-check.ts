/**
 * The chain decides, not the facilitator (issue 10, items 1 and 2). A remote
 * facilitator's settle answer is a claim about the chain; with an RPC for the
 * row's network the gateway checks it before a byte is served:
 *
 * - `success` with a transaction: its receipt must show this authorization's
 *   AuthorizationUsed and Transfer (one RPC call). If it does not, nothing is
 *   served, the answer names an untrusted facilitator, the row stays pending
 *   (unconfirmed) for reconciliation, and the error is logged.
 * - `success:false` after the settle went out: the facilitator may have
 *   settled and lost track (`invalid_transaction_state` with the real hash,
 *   HTTP 400 `unexpected_settle_error`). The chain is asked what became of the
 *   authorization; the row is released only when the nonce is unused and no
 *   transaction was named. A spent nonce never releases a row.
 *
 * The built-in facilitator (`confirmsOnChain`) answers from its own receipt
 * check: its word is the chain's and nothing here runs for it.
 */
import { Reason } from "../x402/reasons";
import {
  type Outcome,
  type PaymentAttempt,
  paid,
  type SettlerDeps,
  safeReason,
  type Timings,
  unconfirmed,
  withDeadline,
} from "./outcome";
import type { Payment } from "./store";

/** The answer and log text for a settlement the chain does not show. */
export const UNTRUSTED = "untrusted facilitator";

/** Whether this facilitator's answers must be checked on chain. */
const checked = (deps: SettlerDeps) => !deps.facilitator.confirmsOnChain;

/**
 * The facilitator says `success` with `txHash`: recorded as paid once the
 * chain agrees (or at once, with no RPC for the network, or for the built-in
 * facilitator).
 */
export async function confirmSuccess(
  deps: SettlerDeps,
  attempt: PaymentAttempt,
  row: Payment,
  txHash: string,
  timings?: Timings,
): Promise<Outcome> {
  if (!checked(deps) || !deps.confirm) return paid(deps, attempt, row, txHash, timings);
  const { claim } = attempt;
  let check: Awaited<ReturnType<NonNullable<SettlerDeps["confirm"]>>>;
  try {
    check = await withDeadline(deps.confirm(row, txHash), deps.timeoutMs, "chain confirmation");
  } catch (error) {
    return unconfirmed(
      deps,
      attempt,
      row,
      `confirming ${txHash}: ${safeReason(error)}`,
      false,
      "the settlement could not be confirmed on chain",
    );
  }
  if (!check || check.state === "confirmed") return paid(deps, attempt, row, txHash, timings);
  const why = check.state === "absent" ? "the chain has no such transaction" : check.detail;
  await deps.payments.markUnconfirmed(row.id, `${UNTRUSTED}: settle claimed ${txHash}; ${why}`);
  deps.log?.error(
    { cid: claim.cid, payer: claim.payer, tx: txHash, reason: why },
    "untrusted facilitator: it reported a settlement the chain does not show; nothing served, kept for reconciliation",
  );
  return {
    kind: "unavailable",
    code: "facilitator_untrusted",
    message: `${UNTRUSTED}: it reported a settlement the chain does not show`,
  };
}

/**
 * The facilitator answered `success:false` with `reason` (not a "not yet")
 * after the settle went out. Undefined: release the row as before (the
 * built-in facilitator, or no RPC and no transaction named: the facilitator's
 * word). Otherwise the outcome the chain leads to.
 */
export async function afterRefusedSettle(
  deps: SettlerDeps,
  attempt: PaymentAttempt,
  row: Payment,
  reason: string,
  txHash: string,
): Promise<Outcome | undefined> {
  if (!checked(deps)) return undefined;
  const detail = `settle answered ${reason}${txHash ? ` (${txHash})` : ""}`;
  // Without an RPC for the network, a named transaction may have moved the money: never released on a guess.
  const blind = () =>
    txHash ? unconfirmed(deps, attempt, row, detail, false, "the settlement's outcome is not known") : undefined;
  if (!deps.lookup) return blind();
  let finding: Awaited<ReturnType<NonNullable<SettlerDeps["lookup"]>>>;
  try {
    finding = await withDeadline(deps.lookup(row), deps.timeoutMs, "chain lookup");
  } catch (error) {
    return unconfirmed(
      deps,
      attempt,
      row,
      `${detail}; chain lookup: ${safeReason(error)}`,
      false,
      "the payment could not be confirmed yet",
    );
  }
  if (!finding) return blind();
  if (finding.state === "paid") {
    deps.log?.warn(
      { cid: attempt.claim.cid, payer: attempt.claim.payer, tx: finding.txHash, reason },
      "the facilitator refused a settlement the chain shows as paid: recorded as paid",
    );
    return paid(deps, attempt, row, finding.txHash);
  }
  if (finding.state === "spent") {
    await deps.payments.markFailed(row.id, `${detail}; ${finding.detail}`);
    return { kind: "refused", reason: Reason.paymentAlreadyUsed, message: finding.detail };
  }
  if (finding.state === "unused" && !txHash) return undefined; // refused, and nothing moved: released
  if (finding.state === "unused" && finding.chainTime >= row.validBefore) {
    await deps.payments.markFailed(row.id, `${detail}; the authorization expired unused`);
    return { kind: "refused", reason: Reason.validBefore, message: "the authorization expired before it was settled" };
  }
  // A named transaction not mined yet, or a used nonce whose transaction was not found: reconciliation decides.
  return unconfirmed(deps, attempt, row, detail, true);
}
