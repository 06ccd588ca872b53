/**
 * Wire shapes of GET /v3/x402/payments, declared once (TypeBox): Elysia
 * validates the query with them, OpenAPI documents them, types derive.
 * Names follow the management API's snake_case and its paging
 * (`limit`, `pageToken` -> `next_page_token`).
 */

import { type Static, Type as T } from "@sinclair/typebox";
import { Limit, NextPageToken, PageToken } from "../http/paging";

export const PAYMENTS_LIMIT = { max: 1000, fallback: 20 } as const;

export const ListPaymentsQuery = T.Object({
  limit: T.Optional(Limit(PAYMENTS_LIMIT)),
  pageToken: T.Optional(PageToken),
  cid: T.Optional(T.String({ description: "only payments for this CID (any spelling)" })),
  payer: T.Optional(
    T.String({
      pattern: "^0[xX][0-9a-fA-F]{40}$",
      description: "only payments from this wallet",
      error: "must be a 0x-prefixed 20-byte hex address",
    }),
  ),
  payment_instruction_id: T.Optional(T.String({ description: "only payments under this payment instruction" })),
  state: T.Optional(
    T.Union([T.Literal("pending"), T.Literal("settled"), T.Literal("failed")], {
      description: "pending, settled or failed",
      error: "must be pending, settled or failed",
    }),
  ),
  from: T.Optional(
    T.String({
      format: "date-time",
      description: "created at or after (ISO 8601)",
      error: "must be an ISO 8601 date-time",
    }),
  ),
  to: T.Optional(
    T.String({ format: "date-time", description: "created before (ISO 8601)", error: "must be an ISO 8601 date-time" }),
  ),
});
export type ListPaymentsQuery = Static<typeof ListPaymentsQuery>;

export const PaymentRecord = T.Object({
  id: T.Integer(),
  state: T.Union([T.Literal("pending"), T.Literal("settled"), T.Literal("failed")]),
  cid: T.String(),
  payment_instruction_id: T.String(),
  payment_instruction_version: T.Integer(),
  network: T.String({ description: "base or base-sepolia" }),
  asset: T.String(),
  payer: T.String(),
  pay_to: T.String(),
  amount: T.String({ description: "paid, in the asset's smallest unit" }),
  amount_usd: T.String({ description: 'the same in US dollars, exact (USDC): "$0.01"' }),
  nonce: T.String({ description: "EIP-3009 authorization nonce" }),
  transaction: T.Union([T.String(), T.Null()], { description: "settlement transaction hash" }),
  valid_before: T.Integer({ description: "authorization expiry, unix seconds" }),
  x402_version: T.Integer(),
  error: T.Union([T.String(), T.Null()], {
    description:
      "why a failed payment failed, or why a pending one is unconfirmed (settle sent, outcome not known yet)",
  }),
  created_at: T.String({ format: "date-time" }),
  updated_at: T.String({ format: "date-time" }),
});
export type PaymentRecord = Static<typeof PaymentRecord>;

export const PaymentTotal = T.Object({
  network: T.String(),
  asset: T.String(),
  amount: T.String({ description: "settled revenue, smallest unit" }),
  amount_usd: T.String({ description: 'the same in US dollars, exact (USDC): "$1.25"' }),
  count: T.Integer({ description: "settled payments" }),
});
export type PaymentTotal = Static<typeof PaymentTotal>;

export const PaymentListResponse = T.Object({
  data: T.Object({
    payments: T.Array(PaymentRecord),
    next_page_token: NextPageToken,
    totals: T.Array(PaymentTotal, {
      description: "settled revenue per network and asset over all pages of this filter",
    }),
  }),
});

export const PaymentIdParams = T.Object({
  id: T.String({ pattern: "^[0-9]{1,15}$", description: "payment id", error: "must be a payment id (digits)" }),
});

export const ResolvePaymentBody = T.Object(
  {
    action: T.Optional(
      T.Union([T.Literal("check"), T.Literal("settle"), T.Literal("release")], {
        description:
          "check (default): the chain decides; settle (with transaction) or release: the operator decides, " +
          "only when no RPC serves the payment's network",
        error: "must be check, settle or release",
      }),
    ),
    transaction: T.Optional(
      T.String({
        pattern: "^0x[0-9a-fA-F]{64}$",
        description: "the settlement transaction (settle without an RPC)",
        error: "must be a 0x-prefixed 32-byte hex hash",
      }),
    ),
    note: T.Optional(T.String({ maxLength: 500, description: "kept with the resolution" })),
  },
  { additionalProperties: false },
);
export type ResolvePaymentBody = Static<typeof ResolvePaymentBody>;

export const ResolutionRecord = T.Object({
  id: T.Integer(),
  payment_id: T.Integer(),
  action: T.String(),
  outcome: T.String({ description: "the payment's state afterwards" }),
  basis: T.String({ description: "chain (read from the chain) or operator (the operator's word, no RPC)" }),
  transaction: T.Union([T.String(), T.Null()]),
  actor: T.String({ description: "who: api:<token subject>/<token id> or cli:<user>" }),
  note: T.Union([T.String(), T.Null()]),
  created_at: T.String({ format: "date-time" }),
});

export const ResolvePaymentResponse = T.Object({
  data: T.Object({ payment: PaymentRecord, resolution: ResolutionRecord }),
});
