/**
 * The x402 `payment-identifier` extension (specs/extensions/payment_identifier.md):
 * the 402 advertises it, a client that supports it puts an id of its own in
 * the payment payload's `extensions` and sends the same id on a retry. Here:
 * the advertised entry, reading and checking the id, and the payload hash
 * that tells "the same request again" from "another request with the same
 * id" (ledger/payment-identifiers.ts stores both).
 */
import { createHash } from "node:crypto";
import { isValidPaymentId, paymentIdentifierSchema } from "@x402/extensions/payment-identifier";
import { Extension, type PaymentIdentifierEntry } from "./extensions";
import { Reason } from "./reasons";

// Built once and frozen: the same object goes into every cached 402.
// The schema is the package's (the JSON Schema its clients validate against).
const ADVERTISED: PaymentIdentifierEntry = Object.freeze({
  info: Object.freeze({ required: false }),
  schema: paymentIdentifierSchema as unknown as Record<string, unknown>,
});

/**
 * The `extensions["payment-identifier"]` entry of the v2 402: optional
 * (`required: false`), so clients that do not know the extension still buy.
 */
export function paymentIdentifierExtension(): PaymentIdentifierEntry {
  return ADVERTISED;
}

export type PaymentIdentifierRead =
  | { ok: true; id: string }
  | { ok: false; reason: typeof Reason.paymentIdentifierInvalid; message: string };

// One shared answer, frozen: no caller can change what the next one gets.
const INVALID = Object.freeze({
  ok: false,
  reason: Reason.paymentIdentifierInvalid,
  message: "payment-identifier id must be 16-128 characters of letters, digits, '-' and '_'",
} as const);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The id a v2 payment payload carries, undefined when it carries none (no
 * extension, or the extension echoed without an id: allowed, since we do not
 * require one). An id of the wrong form is refused rather than ignored: a
 * client that sent one expects idempotency, and silently charging it
 * without would break that promise.
 */
export function readPaymentIdentifier(payload: unknown): PaymentIdentifierRead | undefined {
  if (!isObject(payload) || !isObject(payload.extensions)) return undefined;
  // Own keys only: a client's JSON must not reach Object.prototype.
  if (!Object.hasOwn(payload.extensions, Extension.paymentIdentifier)) return undefined;
  const entry = payload.extensions[Extension.paymentIdentifier];
  if (!isObject(entry) || !isObject(entry.info)) return INVALID;
  const id = entry.info.id;
  if (id === undefined) return undefined;
  return typeof id === "string" && isValidPaymentId(id) ? { ok: true, id } : INVALID;
}

/**
 * sha256 (hex) of a payment payload, keys sorted at every depth: the same
 * payload re-encoded by another client library (other key order, other
 * whitespace) hashes the same, any changed value hashes differently. A
 * retry that signs a fresh authorization is therefore a different payload
 * (the spec's 409), as the spec intends.
 */
export function paymentPayloadHash(payload: unknown): string {
  return createHash("sha256").update(canonicalJson(payload)).digest("hex");
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (isObject(value)) {
    const keys = Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
