/**
 * The x402 facilitator HTTP API, exactly as the reference clients call it
 * (`x402`'s useFacilitator, `@x402/core`'s HTTPFacilitatorClient):
 *
 *   POST /verify    {x402Version, paymentPayload, paymentRequirements} -> {isValid, invalidReason?, payer}
 *   POST /settle    same body                                          -> {success, errorReason?, transaction, network, payer}
 *   GET  /supported                                                    -> {kinds, extensions, signers}
 *
 * An invalid payment is an answer (HTTP 200, isValid/success false). A body
 * that is not JSON or lacks a field is a 400 naming it, carrying the x402 flag
 * too so clients raise their typed VerifyError/SettleError; it never reaches
 * the chain. An RPC that does not answer is a 503.
 */
import { Elysia } from "elysia";
import { errorBody } from "../http/errors";
import { parseFacilitatorRequest } from "../x402/facilitator-request";
import type { FacilitatorRequest } from "../x402/models";
import { Reason } from "../x402/reasons";
import { type Facilitator, FacilitatorUnavailableError } from "./types";

type Endpoint = "verify" | "settle";

function refusal(endpoint: Endpoint, code: string, message: string) {
  const flag =
    endpoint === "verify"
      ? { isValid: false, invalidReason: Reason.invalidPayload }
      : { success: false, errorReason: Reason.invalidPayload, transaction: "", network: "" };
  return Response.json({ ...flag, ...errorBody(code, message) }, { status: 400 });
}

function readRequest(endpoint: Endpoint, text: unknown): FacilitatorRequest | Response {
  let body: unknown;
  try {
    body = JSON.parse(typeof text === "string" ? text : "");
  } catch {
    return refusal(endpoint, "invalid_json", "the request body is not valid JSON");
  }
  const parsed = parseFacilitatorRequest(body);
  return parsed.ok ? parsed.request : refusal(endpoint, "invalid_request", parsed.message);
}

async function answer<T>(work: () => Promise<T>): Promise<T | Response> {
  try {
    return await work();
  } catch (e) {
    if (e instanceof FacilitatorUnavailableError) {
      return Response.json(errorBody("chain_unavailable", e.message), { status: 503 });
    }
    throw e;
  }
}

/** The facilitator endpoints for any Facilitator (the self-hosted one in `cidgate facilitator`). */
export function facilitatorModule(facilitator: Facilitator) {
  return new Elysia({ name: "facilitator" })
    .post(
      "/verify",
      ({ body }) => {
        const request = readRequest("verify", body);
        return request instanceof Response ? request : answer(() => facilitator.verify(request));
      },
      { parse: "text" },
    )
    .post(
      "/settle",
      ({ body }) => {
        const request = readRequest("settle", body);
        return request instanceof Response ? request : answer(() => facilitator.settle(request));
      },
      { parse: "text" },
    )
    .get("/supported", () => answer(() => facilitator.supported()));
}
