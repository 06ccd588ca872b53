/**
 * The management API, wire-compatible with Pinata's x402 payment-instructions
 * API (the `pinata` SDK works against it by changing its endpoint URL).
 * The instance is the controller: validate, call the store, shape the answer.
 */
import { Elysia } from "elysia";
import { type AuthDeps, auth } from "../http/auth";
import { jsonBody } from "../http/body";
import { invalidInput } from "../http/errors";
import { openapiDocs } from "../http/openapi";
import { parseLimit } from "../http/paging";
import type { Settings } from "../settings";
import {
  CIDS_LIMIT,
  CidAssociationResponse,
  CidListResponse,
  CidParams,
  CreateInstructionBody,
  EmptyResponse,
  ErrorResponse,
  IdParams,
  INSTRUCTIONS_LIMIT,
  InstructionListResponse,
  InstructionResponse,
  ListCidsQuery,
  ListInstructionsQuery,
  type PaymentInstruction,
  UpdateInstructionBody,
} from "./model";
import { normalizeRequirements } from "./requirements";
import type { InstructionRecord, InstructionStore } from "./store";

export const INSTRUCTIONS_PREFIX = "/v3/x402/payment_instructions";

/** The wire shape, in Pinata's field order; `description` omitted when empty. */
function toWire(r: InstructionRecord): PaymentInstruction {
  const out: PaymentInstruction = {
    id: r.id,
    version: r.version,
    payment_requirements: r.requirements,
    name: r.name,
    created_at: r.createdAt,
    updated_at: r.updatedAt,
    source: r.source,
    access: r.access,
    access_scope: r.access_scope,
  };
  if (r.description) out.description = r.description;
  return out;
}

/** Response schemas for OpenAPI: the success model plus the error shape for each status the route can answer. */
const read = <S>(ok: S) => ({
  200: ok,
  400: ErrorResponse,
  401: ErrorResponse,
  403: ErrorResponse,
  404: ErrorResponse,
});
const write = <S>(ok: S) => ({ ...read(ok), 409: ErrorResponse, 413: ErrorResponse, 415: ErrorResponse });

/** What the management API needs; app.ts builds it (the store is the app's, shared with the gateway). */
export interface InstructionsDeps extends AuthDeps {
  store: InstructionStore;
  /** The USDC addresses a requirement's asset defaults to. */
  settings: Pick<Settings, "usdcAddressBase" | "usdcAddressBaseSepolia">;
}

export function instructionsModule(deps: InstructionsDeps) {
  const { store, settings } = deps;

  const requirementsOf = (list: unknown[]) => {
    const result = normalizeRequirements(list, settings);
    if (!result.ok) throw invalidInput(result.errors);
    return result.value;
  };

  const routes = new Elysia({ name: "instructions", prefix: INSTRUCTIONS_PREFIX })
    .use(jsonBody)
    .use(auth(deps))
    .get(
      "",
      async ({ query }) => {
        const page = await store.list({
          limit: parseLimit(query.limit, INSTRUCTIONS_LIMIT),
          pageToken: query.pageToken || undefined,
          cid: query.cid || undefined,
          name: query.name || undefined,
          id: query.id || undefined,
        });
        const data: { payment_instructions: PaymentInstruction[]; next_page_token?: string } = {
          payment_instructions: page.items.map(toWire),
        };
        if (page.nextPageToken) data.next_page_token = page.nextPageToken;
        return { data };
      },
      {
        scope: "read",
        query: ListInstructionsQuery,
        response: read(InstructionListResponse),
        detail: { summary: "List payment instructions, newest first" },
      },
    )
    .post(
      "",
      async ({ body }) => {
        const record = await store.create({
          name: body.name,
          description: body.description,
          requirements: requirementsOf(body.payment_requirements),
          access: body.access,
          access_scope: body.access_scope,
        });
        return { data: toWire(record) };
      },
      {
        scope: "write",
        parse: "json", // documents the body as JSON; jsonBody's hook does the parsing (limits, 415)
        body: CreateInstructionBody,
        response: write(InstructionResponse),
        detail: { summary: "Create a payment instruction" },
      },
    )
    .get("/:id", async ({ params }) => ({ data: toWire(await store.get(params.id)) }), {
      scope: "read",
      params: IdParams,
      response: read(InstructionResponse),
      detail: { summary: "Get a payment instruction" },
    })
    .patch(
      "/:id",
      async ({ params, body }) => {
        const record = await store.update(params.id, {
          name: body.name,
          description: body.description,
          requirements: body.payment_requirements && requirementsOf(body.payment_requirements),
          access: body.access,
          access_scope: body.access_scope,
        });
        return { data: toWire(record) };
      },
      {
        scope: "write",
        params: IdParams,
        parse: "json", // documents the body as JSON; jsonBody's hook does the parsing (limits, 415)
        body: UpdateInstructionBody,
        response: write(InstructionResponse),
        detail: { summary: "Update a payment instruction (omitted fields stay; version +1 on change)" },
      },
    )
    .delete(
      "/:id",
      async ({ params }) => {
        await store.remove(params.id);
        return { data: {} };
      },
      {
        scope: "write",
        params: IdParams,
        response: write(EmptyResponse),
        detail: { summary: "Delete a payment instruction (409 while CIDs are attached)" },
      },
    )
    .get(
      "/:id/cids",
      async ({ params, query }) => {
        const page = await store.listCids(params.id, {
          limit: parseLimit(query.limit, CIDS_LIMIT),
          pageToken: query.pageToken || undefined,
        });
        const data: { cids: string[]; next_page_token?: string } = { cids: page.cids };
        if (page.nextPageToken) data.next_page_token = page.nextPageToken;
        return { data };
      },
      {
        scope: "read",
        params: IdParams,
        query: ListCidsQuery,
        response: read(CidListResponse),
        detail: { summary: "List the CIDs attached to a payment instruction" },
      },
    )
    .put(
      "/:id/cids/:cid",
      async ({ params }) => {
        const m = await store.attachCid(params.id, params.cid);
        return { data: { payment_instruction_id: m.instructionId, cid: m.cid, created_at: m.createdAt } };
      },
      {
        scope: "write",
        params: CidParams,
        response: write(CidAssociationResponse),
        detail: { summary: "Attach a CID (idempotent; 409 if it belongs to another instruction)" },
      },
    )
    .delete(
      "/:id/cids/:cid",
      async ({ params }) => {
        await store.detachCid(params.id, params.cid);
        return { data: {} };
      },
      {
        scope: "write",
        params: CidParams,
        response: write(EmptyResponse),
        detail: { summary: "Detach a CID" },
      },
    );

  // The API docs ride along with the management API they mostly describe
  // (they document every route of the app, the gateway's included).
  return new Elysia({ name: "management-api" }).use(openapiDocs()).use(routes);
}
