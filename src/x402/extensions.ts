/**
 * The two v2 extensions cidgate speaks, as wire models: what the 402
 * advertises under `extensions` and what comes back. Shapes and limits are
 * the x402 specs' (specs/extensions/sign-in-with-x.md, payment_identifier.md)
 * and match `@x402/extensions`, whose clients produce them.
 *
 * Strings carry bounds the specs leave open: a header is attacker-sized
 * input and nothing of ours needs more.
 */
import { type Static, Type as t } from "@sinclair/typebox";
import { Address, Signature } from "./models";

/** The `extensions` keys, as the specs spell them. */
export const Extension = {
  signInWithX: "sign-in-with-x",
  paymentIdentifier: "payment-identifier",
} as const;

/** The header a sign-in-with-x proof travels in: standard base64 of UTF-8 JSON. */
export const SIWX_HEADER = "SIGN-IN-WITH-X";

const Url = t.String({ minLength: 1, maxLength: 2048 });
const IsoTime = t.String({ minLength: 1, maxLength: 64 });

/** One way to sign in that the server takes (CAIP-2 chain + signature type). */
export const SiwxSupportedChain = t.Object({
  chainId: t.String({ maxLength: 64 }),
  type: t.String({ maxLength: 16 }),
  signatureScheme: t.Optional(t.String({ maxLength: 16 })),
});

/** The server's half of the EIP-4361 message (`extensions["sign-in-with-x"].info`). */
export const SiwxInfo = t.Object({
  domain: t.String({ maxLength: 253 }),
  uri: Url,
  version: t.String({ maxLength: 8 }),
  nonce: t.String({ maxLength: 128 }),
  issuedAt: IsoTime,
  expirationTime: t.Optional(IsoTime),
  notBefore: t.Optional(IsoTime),
  statement: t.Optional(t.String({ maxLength: 512 })),
  requestId: t.Optional(t.String({ maxLength: 128 })),
  resources: t.Optional(t.Array(Url, { maxItems: 16 })),
});

/** The 402's `extensions["sign-in-with-x"]` entry. `schema` is the JSON Schema of the proof. */
export const SiwxChallenge = t.Object({
  info: SiwxInfo,
  supportedChains: t.Array(SiwxSupportedChain),
  schema: t.Record(t.String(), t.Unknown()),
});

/**
 * The SIGN-IN-WITH-X header, decoded: the server's fields echoed, plus the
 * chain picked, the address and its signature. EVM only (Solana is not
 * offered), so the address is 0x hex and the signature hex bytes.
 */
export const SiwxProof = t.Composite([
  SiwxInfo,
  t.Object({
    address: Address,
    chainId: t.String({ maxLength: 64 }),
    type: t.String({ maxLength: 16 }),
    signatureScheme: t.Optional(t.String({ maxLength: 16 })),
    signature: Signature,
  }),
]);

/** payment-identifier's id: 16-128 of letters, digits, `-` and `_` (spec "id Format"). */
export const PaymentIdentifierId = t.String({ minLength: 16, maxLength: 128, pattern: "^[A-Za-z0-9_-]+$" });

/** `extensions["payment-identifier"]`: the server says whether an id is required, the client adds `id`. */
export const PaymentIdentifierEntry = t.Object({
  info: t.Object({ required: t.Boolean(), id: t.Optional(t.Unknown()) }),
  schema: t.Optional(t.Record(t.String(), t.Unknown())),
});

export type SiwxSupportedChain = Static<typeof SiwxSupportedChain>;
export type SiwxInfo = Static<typeof SiwxInfo>;
export type SiwxChallenge = Static<typeof SiwxChallenge>;
export type SiwxProof = Static<typeof SiwxProof>;
export type PaymentIdentifierEntry = Static<typeof PaymentIdentifierEntry>;
