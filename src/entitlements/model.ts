/**
 * Wire shapes of /v3/x402/entitlements, declared once (TypeBox): Elysia
 * validates requests with them, OpenAPI documents them, types derive.
 * Names and paging follow the payments list (snake_case, `limit`,
 * `pageToken` -> `next_page_token`).
 */

import { type Static, Type as T } from "@sinclair/typebox";
import { Limit, NextPageToken, PageToken } from "../http/paging";

export const ENTITLEMENTS_LIMIT = { max: 1000, fallback: 20 } as const;
export const MAX_NOTE = 500;

const Address = (description: string) =>
  T.String({
    pattern: "^0[xX][0-9a-fA-F]{40}$",
    description,
    error: "must be a 0x-prefixed 20-byte hex address",
  });

export const ListEntitlementsQuery = T.Object({
  limit: T.Optional(Limit(ENTITLEMENTS_LIMIT)),
  pageToken: T.Optional(PageToken),
  payer: T.Optional(Address("only entitlements of this wallet (any case)")),
  cid: T.Optional(
    T.String({ description: "only entitlements to this CID (any spelling); instruction-wide ones are not included" }),
  ),
  payment_instruction_id: T.Optional(T.String({ description: "only entitlements that came from this instruction" })),
  active: T.Optional(
    T.Union([T.Literal("true"), T.Literal("false")], {
      description: "true: usable now (not revoked, not expired); false: revoked or expired",
      error: "must be true or false",
    }),
  ),
});
export type ListEntitlementsQuery = Static<typeof ListEntitlementsQuery>;

export const GrantEntitlementBody = T.Object(
  {
    payer: Address("the wallet that may download without paying"),
    cid: T.Optional(
      T.String({
        description: "one CID of the instruction (any spelling); omitted: every CID of the instruction",
      }),
    ),
    payment_instruction_id: T.String({ description: "the instruction the entitlement is under", error: "is required" }),
    expires_at: T.Optional(
      T.Union([T.String({ format: "date-time" }), T.Null()], {
        description: "ISO 8601; null or omitted: never expires",
        error: "must be an ISO 8601 date-time, or null",
      }),
    ),
    note: T.Optional(
      T.String({
        maxLength: MAX_NOTE,
        description: "why (a gift, a refund made good)",
        error: `must be a string of at most ${MAX_NOTE} characters`,
      }),
    ),
  },
  { additionalProperties: false, error: "must be a JSON object with payer and payment_instruction_id" },
);
export type GrantEntitlementBody = Static<typeof GrantEntitlementBody>;

/** Any text: an id that is not a number is as unknown as one that is not there (404, like the instructions' ids). */
export const EntitlementIdParams = T.Object({ id: T.String({ description: "entitlement id" }) });

export const EntitlementRecord = T.Object({
  id: T.Integer(),
  payer: T.String({ description: "EIP-55 checksummed" }),
  scope: T.Union([T.Literal("cid"), T.Literal("instruction")], {
    description: '"cid": that CID only; "instruction": every CID of the instruction',
  }),
  cid: T.Union([T.String(), T.Null()], { description: "set for scope cid" }),
  payment_instruction_id: T.String(),
  source: T.Union([T.Literal("payment"), T.Literal("grant")], {
    description: '"payment": granted by a settled payment; "grant": by hand',
  }),
  payment_id: T.Union([T.Integer(), T.Null()], { description: "the payment it came from (see /v3/x402/payments)" }),
  granted_at: T.String({ description: "ISO 8601 UTC" }),
  expires_at: T.Union([T.String(), T.Null()], { description: "ISO 8601 UTC; null: never" }),
  revoked_at: T.Union([T.String(), T.Null()], { description: "ISO 8601 UTC; null: not revoked" }),
  note: T.Union([T.String(), T.Null()]),
  active: T.Boolean({ description: "usable now: not revoked and not expired" }),
});
export type EntitlementRecord = Static<typeof EntitlementRecord>;

export const EntitlementResponse = T.Object({ data: EntitlementRecord });

export const EntitlementListResponse = T.Object({
  data: T.Object({
    entitlements: T.Array(EntitlementRecord),
    next_page_token: NextPageToken,
  }),
});

/** An entitlement's fields as every answer and webhook spells them (the API adds id, note and active). */
export function entitlementFields<
  E extends {
    payer: string;
    scope: string;
    cid: string | null;
    instructionId: string;
    source: string;
    paymentId: number | null;
    grantedAt: string;
    expiresAt: number | null;
    revokedAt: string | null;
  },
>(e: E) {
  return {
    payer: e.payer,
    scope: e.scope as E["scope"],
    cid: e.cid,
    payment_instruction_id: e.instructionId,
    source: e.source as E["source"],
    payment_id: e.paymentId,
    granted_at: e.grantedAt,
    expires_at: e.expiresAt === null ? null : new Date(e.expiresAt * 1000).toISOString(),
    revoked_at: e.revokedAt,
  };
}
