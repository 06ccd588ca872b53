/**
 * verify -> settle -> ledger, once per authorization.
 *
 * The ledger row is claimed before the facilitator hears of the proof, so a
 * proof is settled at most once even across restarts. Within the process,
 * requests carrying the same authorization while it settles wait for that
 * one settlement (a promise per authorization) and share its outcome.
 * A settled proof re-presented for the same CID before it expires is served
 * again without a new charge (a buyer whose response was lost retries).
 */
import type { NetworkName } from "../chain/networks";
import type { Db } from "../db/client";
import { type Facilitator, type FacilitatorRequest, FacilitatorUnavailableError } from "../facilitator/types";
import { type AuthorizationKey, claimPayment, markFailed, markSettled, type Payment } from "../ledger/service";
import { type DecodedProof, Reasons } from "./proof";
import { buildReceipt, type Receipt } from "./receipts";
import type { AcceptedRequirement } from "./requirements";

export type Outcome =
  | { kind: "paid"; payment: Payment; receipt: Receipt; newCharge: boolean; timings?: Timings }
  | { kind: "refused"; reason: string; message: string }
  | { kind: "unavailable"; message: string };

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
}

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
    return { kind: "refused", reason: Reasons.inProgress, message: "this authorization is being settled by another request" };
  }
  return { kind: "refused", reason: Reasons.alreadyUsed, message: "this authorization has already paid for other content" };
}

/** Creates the settler of one app: its in-flight map lives as long as the app. */
export function createSettler(deps: SettlerDeps) {
  const inflight = new Map<string, { cid: string; proofHash: string; outcome: Promise<Outcome> }>();

  async function settle(attempt: PaymentAttempt, row: Payment): Promise<Outcome> {
    const { requirement, proof } = attempt;
    const request: FacilitatorRequest = {
      x402Version: proof.x402Version,
      paymentPayload: proof.raw as unknown as Record<string, unknown>,
      // Our own offer, never the client's copy of it.
      paymentRequirements: (proof.x402Version === 2 ? requirement.v2 : requirement.v1) as unknown as Record<string, unknown>,
    };
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
      const settled = await withDeadline(deps.facilitator.settle(request), deps.timeoutMs, "settle");
      const timings = { verifyMs: t1 - t0, settleMs: performance.now() - t1 };
      if (!settled.success) {
        const reason = settled.errorReason ?? "settle_failed";
        markFailed(deps.db, row.id, `settle: ${reason}`);
        deps.log?.info({ cid: attempt.cid, payer: proof.from, reason }, "settlement failed");
        return { kind: "refused", reason, message: "the payment could not be settled" };
      }
      // Only a pending row is marked; a row released meanwhile (it cannot be, within the bounds) is recorded anyway.
      const payment = markSettled(deps.db, row.id, settled.transaction) ?? { ...row, state: "settled" as const, txHash: settled.transaction };
      deps.log?.info({ cid: attempt.cid, payer: proof.from, network: requirement.network, amount: payment.amount, tx: settled.transaction }, "payment settled");
      const receipt = buildReceipt(proof.x402Version, requirement.network, settled.transaction, proof.from);
      return { kind: "paid", payment, receipt, newCharge: true, timings };
    } catch (error) {
      const message = error instanceof FacilitatorUnavailableError ? error.message : "facilitator error";
      // RPC and facilitator URLs may carry API keys: never log them.
      const reason = (error instanceof Error ? error.message : String(error)).split("\n")[0].replace(/\b\w+:\/\/\S+/g, "<url>").slice(0, 300);
      deps.log?.warn({ cid: attempt.cid, reason }, "payment not settled: facilitator unavailable");
      // Released: the authorization was not spent (as far as we know) and may be presented again.
      markFailed(deps.db, row.id, message);
      return { kind: "unavailable", message };
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
      // A pending row older than two bounded facilitator calls is from an interrupted process.
      const staleBefore = new Date(Date.now() - 2 * deps.timeoutMs - 5000).toISOString();
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
      const outcome = settle(attempt, claim.payment);
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
