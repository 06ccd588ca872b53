/**
 * The HTTP headers x402 travels in, and their encoding: standard padded
 * base64 of UTF-8 JSON, as every x402 package encodes them.
 */
export const Header = {
  /** v2 offer (the 402's base64 JSON twin of the v1 body). */
  paymentRequired: "PAYMENT-REQUIRED",
  /** v2 proof. */
  paymentSignature: "PAYMENT-SIGNATURE",
  /** v1 proof. */
  xPayment: "X-PAYMENT",
  /** v2 receipt. */
  paymentResponse: "PAYMENT-RESPONSE",
  /** v1 receipt. */
  xPaymentResponse: "X-PAYMENT-RESPONSE",
} as const;

export function encodeHeader(value: unknown): string {
  return Buffer.from(JSON.stringify(value), "utf8").toString("base64");
}

/** The receipt header's name for a proof of this version. */
export const receiptHeaderName = (x402Version: 1 | 2) =>
  x402Version === 2 ? Header.paymentResponse : Header.xPaymentResponse;
