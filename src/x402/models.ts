/**
 * The x402 wire vocabulary, declared once: requirements, payment payloads,
 * the 402 bodies, facilitator requests and answers, receipts, in v1 and v2.
 * The gateway decodes proofs with these models and builds its offers to
 * them; the facilitator validates its requests with them. Types are derived
 * from the models, never written beside them.
 *
 * Objects allow unknown fields (TypeBox's default): the wire format grows
 * (extensions, outputSchema, ...) and a client sending more is not wrong.
 */
import { type Static, Type as t } from "@sinclair/typebox";

export const Address = t.String({ pattern: "^0x[0-9a-fA-F]{40}$", description: "a 0x-prefixed 20-byte address" });
export const Uint = t.String({ pattern: "^[0-9]{1,78}$", description: "a decimal integer string" });
export const Bytes32 = t.String({ pattern: "^0x[0-9a-fA-F]{64}$", description: "a 0x-prefixed 32-byte hex string" });
// 65 bytes for an EOA; longer for smart wallets (ERC-1271 / ERC-6492), bounded. Whole bytes only:
// an odd digit count would pass as "longer than 65 bytes" and cost a facilitator call.
export const Signature = t.String({
  pattern: "^0x(?:[0-9a-fA-F]{2})+$",
  maxLength: 16384,
  description: "0x-prefixed hex bytes",
});
const Eip712Extra = t.Object({ name: t.Optional(t.String()), version: t.Optional(t.String()) });

/** EIP-3009 TransferWithAuthorization as the `exact` EVM scheme carries it (decimal strings). */
export const Authorization = t.Object({
  from: Address,
  to: Address,
  value: Uint,
  validAfter: Uint,
  validBefore: Uint,
  nonce: Bytes32,
});

/** The scheme-specific part of a payment, the same in v1 and v2. */
export const ExactEvmPayload = t.Object({ signature: Signature, authorization: Authorization });

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

/** X-PAYMENT (v1): the network is all it names of the requirement it pays. */
export const PaymentPayloadV1 = t.Object({
  x402Version: t.Literal(1),
  scheme: t.String(),
  network: t.String(),
  payload: ExactEvmPayload,
});

/** PAYMENT-SIGNATURE (v2): carries the requirement it accepted. */
export const PaymentPayloadV2 = t.Object({
  x402Version: t.Literal(2),
  accepted: RequirementsV2,
  payload: ExactEvmPayload,
  resource: t.Optional(t.Unknown()),
  extensions: t.Optional(t.Unknown()),
});

/** The resource a v2 402 describes. */
export const ResourceInfo = t.Object({ url: t.String(), description: t.String(), mimeType: t.String() });

/** The 402 body of v1 (x402-fetch and x402-axios read only the body). */
export const PaymentRequiredV1 = t.Object({
  x402Version: t.Literal(1),
  error: t.String(),
  accepts: t.Array(RequirementsV1),
});

/** The v2 402, base64 JSON in the PAYMENT-REQUIRED header. */
export const PaymentRequiredV2 = t.Object({
  x402Version: t.Literal(2),
  error: t.String(),
  resource: ResourceInfo,
  accepts: t.Array(RequirementsV2),
  /** Extensions by name (x402 `specs/extensions/`): what else the server understands. */
  extensions: t.Optional(t.Record(t.String(), t.Unknown())),
});

/** The body of POST /verify and POST /settle, as the reference clients send it. */
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

export const VerifyResponse = t.Object({
  isValid: t.Boolean(),
  invalidReason: t.Optional(t.String()),
  payer: t.Optional(t.String()),
});

/** `success:false` is an answer, not an error: `errorReason` says why. */
export const SettleResponse = t.Object({
  success: t.Boolean(),
  errorReason: t.Optional(t.String()),
  transaction: t.String(),
  network: t.String(),
  payer: t.Optional(t.String()),
});

export const SupportedResponse = t.Object({
  kinds: t.Array(
    t.Object({
      x402Version: t.Number(),
      scheme: t.String(),
      network: t.String(),
      extra: t.Optional(t.Record(t.String(), t.Unknown())),
    }),
  ),
});

/** X-PAYMENT-RESPONSE (v1) / PAYMENT-RESPONSE (v2): the settlement a paid response carries. */
export const Receipt = t.Object({
  success: t.Literal(true),
  transaction: t.String(),
  network: t.String(),
  payer: t.String(),
});

export type Authorization = Static<typeof Authorization>;
export type ExactEvmPayload = Static<typeof ExactEvmPayload>;
export type RequirementsV1 = Static<typeof RequirementsV1>;
export type RequirementsV2 = Static<typeof RequirementsV2>;
export type PaymentPayloadV1 = Static<typeof PaymentPayloadV1>;
export type PaymentPayloadV2 = Static<typeof PaymentPayloadV2>;
export type PaymentPayload = PaymentPayloadV1 | PaymentPayloadV2;
export type PaymentRequiredV1 = Static<typeof PaymentRequiredV1>;
export type PaymentRequiredV2 = Static<typeof PaymentRequiredV2>;
export type FacilitatorRequestV1 = Static<typeof FacilitatorRequestV1>;
export type FacilitatorRequestV2 = Static<typeof FacilitatorRequestV2>;
export type FacilitatorRequest = FacilitatorRequestV1 | FacilitatorRequestV2;
export type VerifyResponse = Static<typeof VerifyResponse>;
export type SettleResponse = Static<typeof SettleResponse>;
export type SupportedResponse = Static<typeof SupportedResponse>;
export type Receipt = Static<typeof Receipt>;
export type X402Version = 1 | 2;
