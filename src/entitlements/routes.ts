/**
 * /v3/x402/entitlements: who may download what without paying again. List
 * (read scope), grant by hand and revoke (write scope). The instance is the
 * controller: validate, ask the stores, shape the answer; the entitlements
 * store does the writing.
 */
import { Elysia } from "elysia";
import { type AuthDeps, auth } from "../http/auth";
import { jsonBody } from "../http/body";
import { invalidInput, notFound } from "../http/errors";
import { parseLimit } from "../http/paging";
import { ErrorResponse } from "../instructions/model";
import type { InstructionStore } from "../instructions/store";
import { checkGrantTarget, cidOf } from "./grant-target";
import {
  ENTITLEMENTS_LIMIT,
  EntitlementIdParams,
  EntitlementListResponse,
  type EntitlementRecord,
  EntitlementResponse,
  entitlementFields,
  GrantEntitlementBody,
  ListEntitlementsQuery,
} from "./model";
import { type Entitlement, type EntitlementStore, isActive } from "./store";

export const ENTITLEMENTS_PREFIX = "/v3/x402/entitlements";

export function toWire(e: Entitlement, nowSeconds: number): EntitlementRecord {
  return { id: e.id, ...entitlementFields(e), note: e.note, active: isActive(e, nowSeconds) };
}

/** Opaque keyset token: the last row id of the page, tagged so other lists' tokens fail cleanly. */
export function encodeEntitlementsToken(id: number): string {
  return Buffer.from(`e1:${id}`).toString("base64url");
}

function decodeEntitlementsToken(token: string): number {
  const text = /^[A-Za-z0-9_-]{1,100}$/.test(token) ? Buffer.from(token, "base64url").toString("utf8") : "";
  const m = /^e1:([0-9]{1,15})$/.exec(text);
  if (!m) throw invalidInput([{ path: "pageToken", message: "is not a valid page token" }]);
  return Number(m[1]);
}

/** What the entitlements routes need: the store, the instructions to check a grant against, auth, a clock. */
export interface EntitlementsDeps extends AuthDeps {
  entitlements: EntitlementStore;
  instructions: Pick<InstructionStore, "get" | "forCid">;
  /** Unix seconds; tests move it. Default: the system clock. */
  now?: () => number;
}

const read = <S>(ok: S) => ({ 200: ok, 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse });

export function entitlementsModule(deps: EntitlementsDeps) {
  const { entitlements, instructions } = deps;
  const now = deps.now ?? (() => Math.floor(Date.now() / 1000));

  return new Elysia({ name: "entitlements", prefix: ENTITLEMENTS_PREFIX })
    .use(jsonBody)
    .use(auth(deps))
    .get(
      "",
      async ({ query }) => {
        const at = now();
        const page = await entitlements.list(
          {
            payer: query.payer || undefined,
            cid: query.cid ? cidOf(query.cid, "cid") : undefined,
            instructionId: query.payment_instruction_id?.toLowerCase() || undefined,
            active: query.active === undefined ? undefined : query.active === "true",
            now: at,
          },
          {
            limit: parseLimit(query.limit, ENTITLEMENTS_LIMIT),
            afterId: query.pageToken ? decodeEntitlementsToken(query.pageToken) : undefined,
          },
        );
        const data: { entitlements: EntitlementRecord[]; next_page_token?: string } = {
          entitlements: page.items.map((e) => toWire(e, at)),
        };
        if (page.nextAfterId !== undefined) data.next_page_token = encodeEntitlementsToken(page.nextAfterId);
        return { data };
      },
      {
        scope: "read",
        query: ListEntitlementsQuery,
        response: read(EntitlementListResponse),
        detail: { tags: ["entitlements"], summary: "List entitlements, newest first" },
      },
    )
    .post(
      "",
      async ({ body, set }) => {
        const at = now();
        let expiresAt: number | null = null;
        if (body.expires_at) {
          const ms = Date.parse(body.expires_at);
          if (Number.isNaN(ms)) throw invalidInput([{ path: "expires_at", message: "must be an ISO 8601 date-time" }]);
          expiresAt = Math.floor(ms / 1000);
          if (expiresAt <= at) throw invalidInput([{ path: "expires_at", message: "must be in the future" }]);
        }
        const target = await checkGrantTarget(instructions, body.payment_instruction_id, body.cid);
        const granted = await entitlements.grant(
          { payer: body.payer, cid: target.cid, instructionId: target.instructionId, expiresAt, note: body.note },
          at,
        );
        set.status = 201;
        return { data: toWire(granted, at) };
      },
      {
        scope: "write",
        parse: "json", // documents the body as JSON; jsonBody's hook does the parsing (limits, 415)
        body: GrantEntitlementBody,
        response: { ...read(EntitlementResponse), 201: EntitlementResponse, 404: ErrorResponse, 409: ErrorResponse },
        detail: {
          tags: ["entitlements"],
          summary:
            "Grant an entitlement by hand (a gift, a refund made good); without cid, every CID of the instruction",
        },
      },
    )
    .delete(
      "/:id",
      async ({ params }) => {
        const at = now();
        const revoked = /^[0-9]{1,15}$/.test(params.id) ? await entitlements.revoke(Number(params.id), at) : undefined;
        if (!revoked) throw notFound(`no entitlement ${params.id}`);
        return { data: toWire(revoked, at) };
      },
      {
        scope: "write",
        params: EntitlementIdParams,
        response: { ...read(EntitlementResponse), 404: ErrorResponse },
        detail: {
          tags: ["entitlements"],
          summary: "Revoke an entitlement (after a refund); the next download charges again",
        },
      },
    );
}
