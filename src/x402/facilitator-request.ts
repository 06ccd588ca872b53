/**
 * Reading a POST /verify or /settle body: the HTTP routes and the in-process
 * facilitator both check it with the models, so a malformed request is
 * refused before any chain call, with the first wrong field named.
 */
import { ValueErrorType } from "@sinclair/typebox/errors";
import { Value } from "@sinclair/typebox/value";
import { type FacilitatorRequest, FacilitatorRequestV1, FacilitatorRequestV2 } from "./models";

export type ParseResult = { ok: true; request: FacilitatorRequest } | { ok: false; message: string };

function firstError(schema: Parameters<typeof Value.Errors>[0], value: unknown): string {
  const e = Value.Errors(schema, value).First();
  if (!e) return "body: is invalid";
  const where = e.path.replace(/^\//, "").replaceAll("/", ".") || "body";
  const what = (e.schema as { description?: string }).description;
  if (e.type === ValueErrorType.ObjectRequiredProperty) return `${where}: missing${what ? ` (${what})` : ""}`;
  return `${where}: ${what ? `expected ${what}` : e.message.toLowerCase()}`;
}

/**
 * Checks a decoded body against the v1 or v2 shape (chosen by x402Version) and
 * names the first field that is wrong, e.g. `paymentRequirements.payTo:
 * expected a 0x-prefixed 20-byte address`.
 */
export function parseFacilitatorRequest(body: unknown): ParseResult {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return { ok: false, message: "body: expected a JSON object" };
  }
  const b = body as Record<string, unknown>;
  if (b.paymentPayload === undefined) return { ok: false, message: "paymentPayload: missing" };
  if (b.paymentRequirements === undefined) return { ok: false, message: "paymentRequirements: missing" };
  // Clients send x402Version at the top; some only inside the payload.
  const version = b.x402Version ?? (b.paymentPayload as { x402Version?: unknown } | null)?.x402Version;
  const schema = version === 1 ? FacilitatorRequestV1 : version === 2 ? FacilitatorRequestV2 : undefined;
  if (!schema) return { ok: false, message: "x402Version: expected 1 or 2" };
  const candidate = { ...b, x402Version: version };
  if (!Value.Check(schema, candidate)) return { ok: false, message: firstError(schema, candidate) };
  if ((candidate.paymentPayload as { x402Version: unknown }).x402Version !== version) {
    return { ok: false, message: "paymentPayload.x402Version: differs from x402Version" };
  }
  return { ok: true, request: candidate as FacilitatorRequest };
}
