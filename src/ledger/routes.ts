/**
 * GET /v3/x402/payments (read scope): the ledger for the creator, newest
 * first, filtered by cid, payer, instruction, state and time, with settled
 * totals per network and asset so revenue is one call away; amounts in
 * dollars too (`amount_usd`), beside the exact units.
 */
import { Elysia } from "elysia";
import { canonicalCid } from "../content/cid";
import { type AuthDeps, auth } from "../http/auth";
import { invalidInput } from "../http/errors";
import { parseLimit } from "../http/paging";
import { usd } from "../money";
import { ListPaymentsQuery, PAYMENTS_LIMIT, PaymentListResponse, type PaymentRecord, type PaymentTotal } from "./model";
import type { Payment, PaymentFilter, PaymentStore } from "./store";

export const PAYMENTS_PREFIX = "/v3/x402/payments";

function toWire(p: Payment): PaymentRecord {
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

/** What the payments routes need: the store to read, and auth. */
export interface PaymentsDeps extends AuthDeps {
  payments: PaymentStore;
}

export function paymentsModule(deps: PaymentsDeps) {
  return new Elysia({ name: "payments", prefix: PAYMENTS_PREFIX }).use(auth(deps)).get(
    "",
    ({ query }) => {
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
      const page = deps.payments.list(filter, {
        limit: parseLimit(query.limit, PAYMENTS_LIMIT),
        afterId: query.pageToken ? decodePaymentsToken(query.pageToken) : undefined,
      });
      const data: { payments: PaymentRecord[]; next_page_token?: string; totals: PaymentTotal[] } = {
        payments: page.items.map(toWire),
        // Every priced asset is USDC (instructions refuse others): dollars are exact.
        totals: deps.payments.totals(filter).map((t) => ({ ...t, amount_usd: usd(t.amount) })),
      };
      if (page.nextAfterId !== undefined) data.next_page_token = encodePaymentsToken(page.nextAfterId);
      return { data };
    },
    {
      scope: "read",
      query: ListPaymentsQuery,
      response: PaymentListResponse,
      detail: { tags: ["payments"], summary: "List payments, newest first, with settled totals per network and asset" },
    },
  );
}
