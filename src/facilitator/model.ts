/**
 * The body of POST /verify and POST /settle, as the reference clients send it
 * (`x402`'s useFacilitator, `@x402/core`'s HTTPFacilitatorClient):
 * {x402Version, paymentPayload, paymentRequirements}, v1 or v2. Declared once
 * here; the HTTP routes and the in-process facilitator both validate with it,
 * so a malformed request is refused before any chain call. Unknown fields are
 * allowed: the wire format grows (extensions, outputSchema, ...).
 */
import { type Static, Type as t } from "@sinclair/typebox";
import { ValueErrorType } from "@sinclair/typebox/errors";
import { Value } from "@sinclair/typebox/value";

const Address = t.String({ pattern: "^0x[0-9a-fA-F]{40}$", description: "a 0x-prefixed 20-byte address" });
const Uint = t.String({ pattern: "^[0-9]{1,78}$", description: "a decimal integer string" });
const Bytes32 = t.String({ pattern: "^0x[0-9a-fA-F]{64}$", description: "a 0x-prefixed 32-byte hex string" });
const HexBytes = t.String({ pattern: "^0x([0-9a-fA-F]{2})+$", description: "0x-prefixed hex bytes" });
const Eip712Extra = t.Object({ name: t.Optional(t.String()), version: t.Optional(t.String()) });

export const Authorization = t.Object({
  from: Address,
  to: Address,
  value: Uint,
  validAfter: Uint,
  validBefore: Uint,
  nonce: Bytes32,
});

/** The scheme-specific part, the same in v1 and v2. */
export const ExactEvmPayload = t.Object({ signature: HexBytes, authorization: Authorization });

export const RequirementsV1 = t.Object({
  scheme: t.String(),
  network: t.String(),
  maxAmountRequired: Uint,
  resource: t.Optional(t.String()),
  description: t.Optional(t.String()),
  mimeType: t.Optional(t.String()),
  payTo: Address,
  maxTimeoutSeconds: t.Optional(t.Number()),
  asset: Address,
  extra: t.Optional(Eip712Extra),
});

export const RequirementsV2 = t.Object({
  scheme: t.String(),
  network: t.String(),
  amount: Uint,
  payTo: Address,
  maxTimeoutSeconds: t.Optional(t.Number()),
  asset: Address,
  extra: t.Optional(Eip712Extra),
});

export const PaymentPayloadV1 = t.Object({
  x402Version: t.Literal(1),
  scheme: t.String(),
  network: t.String(),
  payload: ExactEvmPayload,
});

export const PaymentPayloadV2 = t.Object({
  x402Version: t.Literal(2),
  accepted: RequirementsV2,
  payload: ExactEvmPayload,
  resource: t.Optional(t.Unknown()),
  extensions: t.Optional(t.Unknown()),
});

export const FacilitatorRequestV1 = t.Object({
  x402Version: t.Literal(1),
  paymentPayload: PaymentPayloadV1,
  paymentRequirements: RequirementsV1,
});

export const FacilitatorRequestV2 = t.Object({
  x402Version: t.Literal(2),
  paymentPayload: PaymentPayloadV2,
  paymentRequirements: RequirementsV2,
});

export type FacilitatorRequestV1 = Static<typeof FacilitatorRequestV1>;
export type FacilitatorRequestV2 = Static<typeof FacilitatorRequestV2>;
export type ParsedFacilitatorRequest = FacilitatorRequestV1 | FacilitatorRequestV2;
export type ExactEvmPayload = Static<typeof ExactEvmPayload>;

export type ParseResult = { ok: true; request: ParsedFacilitatorRequest } | { ok: false; message: string };

function firstError(schema: Parameters<typeof Value.Errors>[0], value: unknown, prefix: string): string {
  const e = Value.Errors(schema, value).First();
  if (!e) return `${prefix}: is invalid`;
  const path = e.path.replace(/^\//, "").replaceAll("/", ".");
  const what = (e.schema as { description?: string }).description;
  const where = path ? `${prefix ? `${prefix}.` : ""}${path}` : prefix || "body";
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
  if (!Value.Check(schema, candidate)) return { ok: false, message: firstError(schema, candidate, "") };
  if ((candidate.paymentPayload as { x402Version: unknown }).x402Version !== version) {
    return { ok: false, message: "paymentPayload.x402Version: differs from x402Version" };
  }
  return { ok: true, request: candidate as ParsedFacilitatorRequest };
}
