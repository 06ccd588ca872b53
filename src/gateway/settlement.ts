/**
 * verify -> settle -> ledger, once per authorization.
 *
 * The ledger row is claimed before the facilitator hears of the proof, so a
 * proof is settled at most once even across restarts. Within the process,
 * requests carrying the same authorization while it settles wait for that
 * one settlement (a promise per authorization) and share its outcome.
 * A settled proof re-presented for the same CID before it expires is served
 * again without a new charge (a buyer whose response was lost retries).
 *
 * A settle that went out but whose outcome never came back (timeout, lost
 * answer, transaction not mined in time: `settlement_pending`) may still
 * land on chain. Its row is neither released nor settled but left pending,
 * marked unconfirmed; the same proof for the same CID presented again
 * resolves it (resolve below) instead of being verified afresh, which
 * would fail on the spent nonce and leave a paying buyer without the file.
 */
import type { NetworkName } from "../chain/networks";
import type { Db } from "../db/client";
import { type Facilitator, type FacilitatorRequest, FacilitatorUnavailableError, type SettleResponse } from "../facilitator/types";
import type { AuthorizationFinding } from "../chain/authorization";
import { type AuthorizationKey, claimPayment, isUnconfirmed, markFailed, markSettled, markUnconfirmed, type Payment } from "../ledger/service";
import { type DecodedProof, Reasons } from "./proof";
import { buildReceipt, type Receipt } from "./receipts";
import type { AcceptedRequirement } from "./requirements";

export type Outcome =
  | { kind: "paid"; payment: Payment; receipt: Receipt; newCharge: boolean; timings?: Timings }
  | { kind: "refused"; reason: string; message: string }
  | { kind: "unavailable"; message: string }
  /** Sent to the chain, not confirmed yet: present the same proof again shortly. */
  | { kind: "pending"; message: string };

/** Time spent waiting on the facilitator, in ms (for Server-Timing and the benchmark). */
export interface Timings {
  verifyMs: number;
  settleMs: number;
}

export interface PaymentAttempt {
  cid: string;
  instruction: { id: string; version: number };
  requirement: AcceptedRequirement;
  proof: DecodedProof;
}

export interface SettlerDeps {
  db: Db;
  facilitator: Facilitator;
  /** Where settlements and facilitator failures are reported (no proofs, no stacks). */
  log?: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  /** Bound on each facilitator call, whatever the facilitator does itself. */
  timeoutMs: number;
  /**
   * Reads what became of a row's authorization on chain (RPC_URL); undefined
   * when there is no RPC for the row's network. Without it an unconfirmed
   * settlement is resolved by the facilitator alone.
   */
  lookup?: (row: Payment) => Promise<AuthorizationFinding | undefined>;
}

/** Facilitator answers that mean "sent, not confirmed yet" rather than a refusal. */
const NOT_YET = new Set(["settlement_pending", "duplicate_settlement"]);

/** Rejects with FacilitatorUnavailableError when `promise` has not settled within `ms`. */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new FacilitatorUnavailableError(`facilitator ${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

export function authorizationKey(requirement: AcceptedRequirement, proof: DecodedProof): AuthorizationKey {
  return { network: requirement.network, asset: requirement.asset, payer: proof.from, nonce: proof.nonce };
}

/** What a stored row means for a request presenting `proof` for `cid` (the row is not ours to settle). */
export function outcomeOfExisting(row: Payment, cid: string, proof: DecodedProof, nowSeconds: number): Outcome {
  const sameProof = row.cid === cid && row.proofHash === proof.proofHash;
  if (row.state === "settled" && sameProof) {
    if (nowSeconds >= row.validBefore) {
      return { kind: "refused", reason: Reasons.validBefore, message: "the authorization has expired" };
    }
    const receipt = buildReceipt(proof.x402Version, row.network as NetworkName, row.txHash ?? "", row.payer);
    return { kind: "paid", payment: row, receipt, newCharge: false };
  }
  if (row.state === "pending") {
    if (isUnconfirmed(row)) {
      return { kind: "refused", reason: Reasons.inProgress, message: "this authorization's settlement is unconfirmed: only the same proof for the same content can complete it" };
    }
    return { kind: "refused", reason: Reasons.inProgress, message: "this authorization is being settled by another request" };
  }
  return { kind: "refused", reason: Reasons.alreadyUsed, message: "this authorization has already paid for other content" };
}

/** The facilitator request for an attempt: our own offer, never the client's copy of it. */
function facilitatorRequest({ requirement, proof }: PaymentAttempt): FacilitatorRequest {
  return {
    x402Version: proof.x402Version,
    paymentPayload: proof.raw as unknown as Record<string, unknown>,
    paymentRequirements: (proof.x402Version === 2 ? requirement.v2 : requirement.v1) as unknown as Record<string, unknown>,
  };
}

/** An error's first line without URLs (RPC and facilitator URLs may carry API keys): safe to log. */
function safeReason(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0].replace(/\b\w+:\/\/\S+/g, "<url>").slice(0, 300);
}

/** Creates the settler of one app: its in-flight map lives as long as the app. */
export function createSettler(deps: SettlerDeps) {
  const inflight = new Map<string, { cid: string; proofHash: string; outcome: Promise<Outcome> }>();

  function paid(attempt: PaymentAttempt, row: Payment, txHash: string, timings?: Timings): Outcome {
    const { requirement, proof } = attempt;
    // Only a pending row is marked; a row released meanwhile (it cannot be, within the bounds) is recorded anyway.
    const payment = markSettled(deps.db, row.id, txHash) ?? { ...row, state: "settled" as const, txHash };
    deps.log?.info({ cid: attempt.cid, payer: proof.from, network: requirement.network, amount: payment.amount, tx: txHash }, "payment settled");
    const receipt = buildReceipt(proof.x402Version, requirement.network, txHash, proof.from);
    return { kind: "paid", payment, receipt, newCharge: true, timings };
  }

  /** The settle went out and its outcome is unknown: keep the row for the same proof to resolve. */
  function unconfirmed(attempt: PaymentAttempt, row: Payment, detail: string, pending: boolean, publicDetail = detail): Outcome {
    markUnconfirmed(deps.db, row.id, detail);
    deps.log?.warn({ cid: attempt.cid, payer: attempt.proof.from, reason: detail }, "settlement unconfirmed: kept for the same proof to resolve");
    return pending
      ? { kind: "pending", message: "the payment was sent to the chain and is not confirmed yet" }
      : { kind: "unavailable", message: `${publicDetail}; the payment may have been made` };
  }

  async function settle(attempt: PaymentAttempt, row: Payment): Promise<Outcome> {
    const { proof } = attempt;
    const request = facilitatorRequest(attempt);
    const t0 = performance.now();
    let t1 = t0;
    try {
      const verified = await withDeadline(deps.facilitator.verify(request), deps.timeoutMs, "verify");
      t1 = performance.now();
      if (!verified.isValid) {
        const reason = verified.invalidReason ?? "invalid_payment";
        markFailed(deps.db, row.id, `verify: ${reason}`);
        deps.log?.info({ cid: attempt.cid, payer: proof.from, reason }, "payment refused by the facilitator");
        return { kind: "refused", reason, message: "the facilitator refused the payment" };
      }
    } catch (error) {
      // Released: the settle was never sent, so the authorization was not spent.
      const message = error instanceof FacilitatorUnavailableError ? error.message : "facilitator error";
      deps.log?.warn({ cid: attempt.cid, reason: safeReason(error) }, "payment not settled: facilitator unavailable");
      markFailed(deps.db, row.id, message);
      return { kind: "unavailable", message };
    }
    let settled: SettleResponse;
    try {
      settled = await withDeadline(deps.facilitator.settle(request), deps.timeoutMs, "settle");
    } catch (error) {
      // The settle request went out (or may have): whatever answer was lost, it may land on chain.
      return error instanceof FacilitatorUnavailableError
        ? unconfirmed(attempt, row, error.message, false)
        : unconfirmed(attempt, row, `facilitator settle: ${safeReason(error)}`, false, "facilitator error");
    }
    const timings = { verifyMs: t1 - t0, settleMs: performance.now() - t1 };
    if (settled.success) return paid(attempt, row, settled.transaction, timings);
    const reason = settled.errorReason ?? "settle_failed";
    if (NOT_YET.has(reason)) return unconfirmed(attempt, row, `settle: ${reason}${settled.transaction ? ` (${settled.transaction})` : ""}`, true);
    markFailed(deps.db, row.id, `settle: ${reason}`);
    deps.log?.info({ cid: attempt.cid, payer: proof.from, reason }, "settlement failed");
    return { kind: "refused", reason, message: "the payment could not be settled" };
  }

  /** Asks the chain about the row's authorization, bounded; undefined without an RPC for its network. */
  async function look(row: Payment): Promise<AuthorizationFinding | undefined> {
    return deps.lookup && withDeadline(deps.lookup(row), deps.timeoutMs, "chain lookup");
  }

  /**
   * The same proof again for a row whose settlement is unconfirmed. Never
   * verified afresh (its nonce may be spent by our own settle): the chain
   * says whether it paid us, else the facilitator settles it again, which
   * joins a transaction it already sent or sends one (the token accepts one
   * use of the nonce, so there is never a second charge). The row is
   * released only when the authorization can no longer pay us.
   */
  async function resolve(attempt: PaymentAttempt, row: Payment): Promise<Outcome> {
    const refusedFinally = (reason: string, detail: string): Outcome => {
      markFailed(deps.db, row.id, detail);
      deps.log?.info({ cid: attempt.cid, payer: attempt.proof.from, reason: detail }, "unconfirmed settlement resolved: not paid");
      return { kind: "refused", reason, message: detail };
    };
    const conclude = (f: AuthorizationFinding | undefined): Outcome | undefined => {
      if (f?.state === "paid") return paid(attempt, row, f.txHash);
      if (f?.state === "spent") return refusedFinally(Reasons.alreadyUsed, f.detail);
      if (f?.state === "unused" && f.chainTime >= row.validBefore) return refusedFinally(Reasons.validBefore, "the authorization expired before it was settled");
      return undefined;
    };
    try {
      const first = await look(row);
      const known = conclude(first);
      if (known) return known;
      if (first?.state === "unknown") return unconfirmed(attempt, row, first.detail, false);

      const settled = await withDeadline(deps.facilitator.settle(facilitatorRequest(attempt)), deps.timeoutMs, "settle");
      if (settled.success) return paid(attempt, row, settled.transaction);
      const reason = settled.errorReason ?? "settle_failed";
      if (NOT_YET.has(reason)) return unconfirmed(attempt, row, `settle: ${reason}${settled.transaction ? ` (${settled.transaction})` : ""}`, true);
      // Refused now, perhaps because our earlier transaction has just used the nonce: look again.
      const second = await look(row);
      const after = conclude(second);
      if (after) return after;
      markUnconfirmed(deps.db, row.id, `settle again: ${reason}`);
      return { kind: "refused", reason, message: "the payment could not be confirmed; present the same proof again later" };
    } catch (error) {
      // Library messages (an RPC error, say) go to the log and the row, not to the buyer.
      return error instanceof FacilitatorUnavailableError
        ? unconfirmed(attempt, row, error.message, false)
        : unconfirmed(attempt, row, `resolving: ${safeReason(error)}`, false, "the payment could not be confirmed yet");
    }
  }

  /**
   * Pays for `attempt.cid` with a proof that passed the local checks.
   * Never throws for a facilitator problem: the outcome says what happened.
   */
  async function pay(attempt: PaymentAttempt, nowSeconds: () => number = () => Math.floor(Date.now() / 1000)): Promise<Outcome> {
    const key = authorizationKey(attempt.requirement, attempt.proof);
    const mapKey = `${key.network}|${key.asset}|${key.payer}|${key.nonce}`;
    for (;;) {
      const running = inflight.get(mapKey);
      if (running) {
        const outcome = await running.outcome;
        if (running.cid === attempt.cid && running.proofHash === attempt.proof.proofHash) {
          // Same proof, same content: the same answer, without a second charge.
          return outcome.kind === "paid" ? { ...outcome, newCharge: false, timings: undefined } : outcome;
        }
        continue; // someone else's attempt ended: look at the ledger again
      }
      // A pending row older than three bounded calls (the most a settlement or resolution makes) is from an interrupted process.
      const staleBefore = new Date(Date.now() - 3 * deps.timeoutMs - 5000).toISOString();
      const claim = claimPayment(deps.db, {
        ...key,
        cid: attempt.cid,
        instructionId: attempt.instruction.id,
        instructionVersion: attempt.instruction.version,
        amount: attempt.proof.value.toString(),
        payTo: attempt.requirement.payTo,
        validBefore: attempt.proof.validBefore,
        x402Version: attempt.proof.x402Version,
        proofHash: attempt.proof.proofHash,
      }, { staleBefore });
      if (!claim.claimed) return outcomeOfExisting(claim.payment, attempt.cid, attempt.proof, nowSeconds());
      // Registered before the first await, so no concurrent request can miss it.
      const outcome = claim.resolve ? resolve(attempt, claim.payment) : settle(attempt, claim.payment);
      inflight.set(mapKey, { cid: attempt.cid, proofHash: attempt.proof.proofHash, outcome });
      try {
        return await outcome;
      } finally {
        inflight.delete(mapKey);
      }
    }
  }

  return { pay, inflightCount: () => inflight.size };
}

export type Settler = ReturnType<typeof createSettler>;
