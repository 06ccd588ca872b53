/**
 * GET /v3/x402/payments (read scope): the ledger for the creator, newest
 * first, filtered by cid, payer, instruction, state and time, with settled
 * totals per network and asset so revenue is one call away; amounts in
 * dollars too (`amount_usd`), beside the exact units.
 * POST /v3/x402/payments/{id}/resolve (write scope): an operator resolves a
 * pending payment (resolve.ts decides; the chain where it can be read).
 */
import { Type as T } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { canonicalCid } from "../content/cid";
import { type AuthDeps, auth } from "../http/auth";
import { jsonBody } from "../http/body";
import { invalidInput } from "../http/errors";
import { parseLimit } from "../http/paging";

import { ErrorResponse } from "../instructions/model";
import { usd } from "../money";
import {
  ListPaymentsQuery,
  PAYMENTS_LIMIT,
  PaymentIdParams,
  PaymentListResponse,
  type PaymentRecord,
  type PaymentTotal,
  ResolvePaymentBody,
  ResolvePaymentResponse,
} from "./model";
import type { Resolution } from "./resolutions";
import type { ResolveRequest } from "./resolve";

import type { Payment, PaymentFilter, PaymentStore } from "./store";

export const PAYMENTS_PREFIX = "/v3/x402/payments";

export function toWire(p: Payment): PaymentRecord {
  return {
    id: p.id,
    state: p.state,
    cid: p.cid,
    payment_instruction_id: p.instructionId,
    payment_instruction_version: p.instructionVersion,
    network: p.network,
    asset: p.asset,
    payer: p.payer,
    pay_to: p.payTo,
    amount: p.amount,
    amount_usd: usd(p.amount),
    nonce: p.nonce,
    transaction: p.txHash,
    valid_before: p.validBefore,
    x402_version: p.x402Version,
    error: p.error,
    created_at: p.createdAt,
    updated_at: p.updatedAt,
  };
}

function resolutionToWire(r: Resolution) {
  return {
    id: r.id,
    payment_id: r.paymentId,
    action: r.action,
    outcome: r.outcome,
    basis: r.basis,
    transaction: r.txHash,
    actor: r.actor,
    note: r.note,
    created_at: r.createdAt,
  };
}

/** Who made a management request: its token's subject and id (the token was checked by auth already). */
function actorOf(authorization: string | null): string {
  try {
    const payload = JSON.parse(Buffer.from((authorization ?? "").split(".")[1] ?? "", "base64url").toString("utf8"));
    const part = (v: unknown) => (typeof v === "string" ? v.replace(/[^\w.:@-]/g, "").slice(0, 80) : "?");
    return `api:${part(payload.sub)}/${part(payload.jti)}`;
  } catch {
    return "api:?";
  }
}

/** Opaque keyset token: the last row id of the page, tagged so other lists' tokens fail cleanly. */
export function encodePaymentsToken(id: number): string {
  return Buffer.from(`p1:${id}`).toString("base64url");
}

function decodePaymentsToken(token: string): number {
  const text = /^[A-Za-z0-9_-]{1,100}$/.test(token) ? Buffer.from(token, "base64url").toString("utf8") : "";
  const m = /^p1:([0-9]{1,15})$/.exec(text);
  if (!m) throw invalidInput([{ path: "pageToken", message: "is not a valid page token" }]);
  return Number(m[1]);
}

function isoTime(text: string | undefined, path: string): string | undefined {
  if (!text) return undefined;
  const t = Date.parse(text);
  if (Number.isNaN(t)) throw invalidInput([{ path, message: "must be an ISO 8601 date-time" }]);
  return new Date(t).toISOString();
}

/** What the payments routes need: the store to read, auth, and the operator's resolution (resolve.ts). */
export interface PaymentsDeps extends AuthDeps {
  payments: PaymentStore;
  resolve: (request: ResolveRequest) => Promise<{ payment: Payment; resolution: Resolution }>;
}

const answers = <S>(ok: S) => ({
  200: ok,
  400: ErrorResponse,
  401: ErrorResponse,
  403: ErrorResponse,
  404: ErrorResponse,
  409: ErrorResponse,
  503: ErrorResponse,
});

export function paymentsModule(deps: PaymentsDeps) {
  return new Elysia({ name: "payments", prefix: PAYMENTS_PREFIX })
    .use(auth(deps))
    .use(jsonBody)
    .post(
      "/:id/resolve",
      async ({ params, body, request }) => {
        const { payment, resolution } = await deps.resolve({
          id: Number(params.id),
          action: body?.action,
          transaction: body?.transaction,
          note: body?.note,
          actor: actorOf(request.headers.get("authorization")),
        });
        return { data: { payment: toWire(payment), resolution: resolutionToWire(resolution) } };
      },
      {
        scope: "write",
        parse: "json",
        params: PaymentIdParams,
        body: T.Union([ResolvePaymentBody, T.Null()]),
        response: answers(ResolvePaymentResponse),
        detail: {
          tags: ["payments"],
          summary:
            "Resolve a pending payment: from the chain when an RPC serves its network; otherwise settle it " +
            "with its transaction or release it (recorded)",
        },
      },
    )
    .get(
      "",
      async ({ query }) => {
        let cid: string | undefined;
        if (query.cid) {
          cid = canonicalCid(query.cid);
          if (!cid) throw invalidInput([{ path: "cid", message: "is not a valid CID (v0 or v1)" }]);
        }
        const filter: PaymentFilter = {
          cid,
          payer: query.payer || undefined,
          instructionId: query.payment_instruction_id?.toLowerCase() || undefined,
          state: query.state,
          createdFrom: isoTime(query.from, "from"),
          createdTo: isoTime(query.to, "to"),
        };
        const page = await deps.payments.list(filter, {
          limit: parseLimit(query.limit, PAYMENTS_LIMIT),
          afterId: query.pageToken ? decodePaymentsToken(query.pageToken) : undefined,
        });
        const data: { payments: PaymentRecord[]; next_page_token?: string; totals: PaymentTotal[] } = {
          payments: page.items.map(toWire),
          // Every priced asset is USDC (instructions refuse others): dollars are exact.
          totals: (await deps.payments.totals(filter)).map((t) => ({ ...t, amount_usd: usd(t.amount) })),
        };
        if (page.nextAfterId !== undefined) data.next_page_token = encodePaymentsToken(page.nextAfterId);
        return { data };
      },
      {
        scope: "read",
        query: ListPaymentsQuery,
        response: PaymentListResponse,
        detail: {
          tags: ["payments"],
          summary: "List payments, newest first, with settled totals per network and asset",
        },
      },
    );
}
