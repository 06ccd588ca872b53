/**
 * What settling one authorization came to, and the writes that record it:
 * shared by the first settlement (settler.ts) and the resolution of an
 * unconfirmed one (recovery.ts), so both end a row the same way.
 */

import type { AuthorizationFinding, SettlementCheck } from "../chain/authorization";
import { type MaybePromise, then } from "../db/awaitable";
import type { AccessPolicy, AccessScope } from "../entitlements/policy";
import type { Entitlement, EntitlementStore } from "../entitlements/store";
import type { Facilitator, FacilitatorRequest } from "../facilitator/types";
import { FacilitatorUnavailableError } from "../facilitator/types";
import { usd } from "../money";
import type { LedgerEvents } from "../notifications/hooks";
import type { Payment, PaymentClaim, PaymentStore } from "./store";

export type Outcome =
  | { kind: "paid"; payment: Payment; newCharge: boolean; entitlement?: GrantedEntitlement; timings?: Timings }
  /** `held`: the row stays unconfirmed (money may have moved); otherwise the authorization was released. */
  | { kind: "refused"; reason: string; message: string; held?: boolean }
  /**
   * No answer; `released`: the settle was never sent, the authorization is free again.
   * `code`: `facilitator_untrusted` when the facilitator claimed a settlement the chain does not show.
   */
  | { kind: "unavailable"; message: string; released?: boolean; code?: "facilitator_untrusted" }
  /** Sent to the chain, not confirmed yet: present the same proof again shortly. */
  | { kind: "pending"; message: string }
  /** The authorization is held or used already, by this proof or another: the caller decides what that row means. */
  | { kind: "existing"; payment: Payment };

/** Time spent waiting on the facilitator, in ms (for Server-Timing and the benchmark). */
export interface Timings {
  verifyMs: number;
  settleMs: number;
}

/** One authorization to settle: the row to claim, and the facilitator request (our own offer, never the client's copy). */
export interface PaymentAttempt {
  claim: PaymentClaim;
  request: FacilitatorRequest;
  /** What the purchase grants once settled (the instruction's access policy); none: nothing beyond the proof. */
  access?: { policy: AccessPolicy; scope: AccessScope };
}

/** The part of an entitlement the purchase needs back: how long access lasts. */
export type GrantedEntitlement = Pick<Entitlement, "id" | "expiresAt">;

export interface SettlerDeps {
  payments: PaymentStore;
  facilitator: Facilitator;
  /** Where settlements and facilitator failures are reported (no proofs, no stacks). */
  log?: {
    info(obj: object, msg: string): void;
    warn(obj: object, msg: string): void;
    error(obj: object, msg: string): void;
  };
  /** Bound on each facilitator call, whatever the facilitator does itself. */
  timeoutMs: number;
  /**
   * Reads what became of a row's authorization on chain (RPC_URL); undefined
   * when there is no RPC for the row's network. Without it an unconfirmed
   * settlement is resolved by the facilitator alone.
   */
  lookup?: (row: Payment) => Promise<AuthorizationFinding | undefined>;
  /**
   * Checks on chain that a transaction a facilitator named settles the row
   * (chain-lookup.ts, one receipt read); undefined without an RPC for its
   * network. Not asked for a facilitator that `confirmsOnChain`.
   */
  confirm?: (row: Payment, txHash: string) => Promise<SettlementCheck | undefined>;
  /** Writes the entitlement a settled payment grants (src/entitlements/store.ts). */
  entitlements?: Pick<EntitlementStore, "grantForPayment">;
  /**
   * Runs `fn` in one database transaction: the settled row and its
   * entitlement are written together or not at all (a crash between them
   * would leave a buyer who paid without access).
   */
  transaction?: <T>(fn: () => MaybePromise<T>) => MaybePromise<T>;
  /** Webhook events (notifications/hooks.ts): queued in the settle transaction, sent later. */
  events?: LedgerEvents;
}

/**
 * Pending rows updated before the time this returns are from a stopped process: three bounded
 * calls are the most a live settlement or resolution makes.
 */
export const staleBeforeFor = (timeoutMs: number) => () => new Date(Date.now() - 3 * timeoutMs - 5000).toISOString();

/** Facilitator answers that mean "sent, not confirmed yet" rather than a refusal. */
export const NOT_YET = new Set(["settlement_pending", "duplicate_settlement"]);

/** Rejects with FacilitatorUnavailableError when `promise` has not settled within `ms`. */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new FacilitatorUnavailableError(`facilitator ${what}: no answer within ${ms} ms`)),
      ms,
    );
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** An error's first line without URLs (RPC and facilitator URLs may carry API keys): safe to log. */
export function safeReason(error: unknown): string {
  return (error instanceof Error ? error.message : String(error))
    .split("\n")[0]
    .replace(/\b\w+:\/\/\S+/g, "<url>")
    .slice(0, 300);
}

/** The settlement transaction is known: the row is settled. */
export async function paid(
  deps: Pick<SettlerDeps, "payments" | "entitlements" | "transaction" | "log" | "events">,
  attempt: Pick<PaymentAttempt, "claim" | "access">,
  row: Payment,
  txHash: string,
  timings?: Timings,
): Promise<Outcome> {
  const { claim, access } = attempt;
  // Synchronous on SQLite, step after step on PostgreSQL (then(), db/awaitable.ts): one transaction either way.
  const record = () =>
    then(
      // Only a pending row is marked; a row released meanwhile (it cannot be, within the bounds) is recorded anyway.
      // A released row the chain shows paid after all (reconcile.ts) is settled from `failed`.
      row.state === "failed" ? deps.payments.settleReleased(row.id, txHash) : deps.payments.markSettled(row.id, txHash),
      (marked) =>
        // payment.settled once per payment: only from the write that settled it.
        then(marked && deps.events?.settled(marked), () => {
          const payment = marked ?? { ...row, state: "settled" as const, txHash };
          const granted = access
            ? deps.entitlements?.grantForPayment({
                payer: claim.payer,
                cid: claim.cid,
                instructionId: claim.instructionId,
                paymentId: payment.id,
                policy: access.policy,
                scope: access.scope,
                nowSeconds: Math.floor(Date.now() / 1000),
              })
            : undefined;
          return then(granted, (entitlement) => ({ payment, entitlement }));
        }),
    );
  const { payment, entitlement } = await (deps.transaction ? deps.transaction(record) : record());
  // The one line per sale: an operator's `grep "payment settled"` is the sales log, in dollars.
  deps.log?.info(
    {
      cid: claim.cid,
      payer: claim.payer,
      network: claim.network,
      usd: usd(payment.amount),
      amount: payment.amount,
      tx: txHash,
    },
    "payment settled",
  );
  return { kind: "paid", payment, newCharge: true, entitlement, timings };
}

/** The claim a stored row stands for (to record it as paid when the chain says so). */
export function claimOf(row: Payment): PaymentClaim {
  return {
    network: row.network,
    asset: row.asset,
    payer: row.payer,
    nonce: row.nonce,
    cid: row.cid,
    instructionId: row.instructionId,
    instructionVersion: row.instructionVersion,
    amount: row.amount,
    payTo: row.payTo,
    validBefore: BigInt(row.validBefore),
    x402Version: row.x402Version as 1 | 2,
    proofHash: row.proofHash,
  };
}

/** The settle went out and its outcome is unknown: keep the row for the same proof to resolve. */
export async function unconfirmed(
  deps: SettlerDeps,
  attempt: PaymentAttempt,
  row: Payment,
  detail: string,
  pending: boolean,
  publicDetail = detail,
): Promise<Outcome> {
  await deps.payments.markUnconfirmed(row.id, detail);
  deps.log?.warn(
    { cid: attempt.claim.cid, payer: attempt.claim.payer, reason: detail },
    "settlement unconfirmed: kept for the same proof to resolve",
  );
  return pending
    ? { kind: "pending", message: "the payment was sent to the chain and is not confirmed yet" }
    : { kind: "unavailable", message: `${publicDetail}; the payment may have been made` };
}

/** The detail kept on an unconfirmed row for a facilitator's "not yet" answer. */
export const notYetDetail = (reason: string, transaction: string) =>
  `settle: ${reason}${transaction ? ` (${transaction})` : ""}`;
