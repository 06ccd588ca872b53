/**
 * The webhook events cidgate sends, and the one envelope every body has:
 *
 *   {"id":"evt_...","type":"payment.settled","created_at":"...","data":{...}}
 *
 * `id` is the same for every webhook the event goes to and across retries:
 * a receiver that stores it answers a repeat delivery without acting twice.
 * Bodies carry no secrets and no payment proofs (no signature, no nonce).
 */
import { entitlementFields } from "../entitlements/model";

export const EVENT_TYPES = [
  "payment.settled",
  "payment.money_moved_without_sale",
  "entitlement.granted",
  "entitlement.revoked",
  "config.reload_failed",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Sent only by POST /v3/x402/webhooks/{id}/test, to that one webhook. */
export const TEST_EVENT = "webhook.test";

export const isEventType = (s: string): s is EventType => (EVENT_TYPES as readonly string[]).includes(s);

export interface EventEnvelope {
  id: string;
  type: EventType | typeof TEST_EVENT;
  created_at: string;
  data: Record<string, unknown>;
}

export function envelope(type: EventEnvelope["type"], data: Record<string, unknown>, now = new Date()): EventEnvelope {
  return { id: `evt_${Bun.randomUUIDv7()}`, type, created_at: now.toISOString(), data };
}

/** The payment fields a receiver needs (the ledger row without proof hash, nonce or internal error text). */
export interface PaymentFacts {
  id: number;
  cid: string;
  instructionId: string;
  network: string;
  asset: string;
  payer: string;
  payTo: string;
  amount: string;
  txHash: string | null;
  updatedAt: string;
}

export const paymentData = (p: PaymentFacts) => ({
  payment_id: p.id,
  cid: p.cid,
  payment_instruction_id: p.instructionId,
  network: p.network,
  asset: p.asset,
  payer: p.payer,
  pay_to: p.payTo,
  amount: p.amount,
  transaction: p.txHash,
  at: p.updatedAt,
});

export interface EntitlementFacts {
  id: number;
  payer: string;
  scope: string;
  cid: string | null;
  instructionId: string;
  source: string;
  paymentId: number | null;
  grantedAt: string;
  expiresAt: number | null;
  revokedAt: string | null;
}

export const entitlementData = (e: EntitlementFacts) => ({ entitlement_id: e.id, ...entitlementFields(e) });
