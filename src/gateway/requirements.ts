/**
 * The 402 answer for one priced file, in both protocol versions (X402.md):
 * the v1 object goes in the body (x402-fetch, x402-axios read only that) and
 * the v2 object, base64-encoded, in the PAYMENT-REQUIRED header (v2 clients
 * read it first). Both are built once per (CID, instruction version, file
 * type) and reused: the 402 path is the hot path.
 */
import { getAddress } from "viem";
import { NETWORKS, type NetworkName } from "../chain/networks";
import type { InstructionRecord } from "../instructions/store";
import { encodeHeader } from "../x402/headers";
import type { PaymentRequiredV1, PaymentRequiredV2, RequirementsV1, RequirementsV2 } from "../x402/models";

/** An instruction as the instruction store hands it out. */
export type Instruction = InstructionRecord;
/** One stored payment requirement (canonical network, checksummed addresses). */
export type StoredRequirement = Instruction["requirements"][number];

/** One requirement in both shapes, plus the stored form it came from. */
export interface AcceptedRequirement {
  stored: StoredRequirement;
  network: NetworkName;
  asset: `0x${string}`;
  payTo: `0x${string}`;
  amount: bigint;
  v1: RequirementsV1;
  v2: RequirementsV2;
}

export interface PaymentRequired {
  resourceUrl: string;
  accepts: AcceptedRequirement[];
  v1: PaymentRequiredV1;
  v2: PaymentRequiredV2;
  /** JSON of `v1`, ready to send. */
  body: string;
  /** base64 JSON of `v2`, the PAYMENT-REQUIRED header value. */
  header: string;
}

export const V1_ERROR = "Provide a valid X-PAYMENT header to access this content";
export const V2_ERROR = "Provide a valid PAYMENT-SIGNATURE header to access this content";

export interface PaymentRequiredInput {
  /** PUBLIC_URL + the gateway path of this CID. */
  resourceUrl: string;
  instruction: Pick<Instruction, "name" | "description" | "requirements">;
  mimeType: string;
  maxTimeoutSeconds: number;
}

/** Builds both 402 shapes for one priced file. */
export function buildPaymentRequired(input: PaymentRequiredInput): PaymentRequired {
  const { resourceUrl, instruction, mimeType, maxTimeoutSeconds } = input;
  // x402-fetch's schema requires a description string on each entry.
  const fallbackDescription = instruction.description ?? instruction.name ?? "";
  const accepts = instruction.requirements.map((stored): AcceptedRequirement => {
    const network = stored.network as NetworkName;
    const facts = NETWORKS[network];
    const asset = getAddress(stored.asset);
    const payTo = getAddress(stored.pay_to);
    const extra = { name: facts.eip712.name, version: facts.eip712.version };
    return {
      stored,
      network,
      asset,
      payTo,
      amount: BigInt(stored.amount),
      v1: {
        scheme: "exact",
        network,
        maxAmountRequired: stored.amount,
        resource: resourceUrl,
        description: stored.description ?? fallbackDescription,
        mimeType,
        payTo,
        maxTimeoutSeconds,
        asset,
        extra,
      },
      v2: { scheme: "exact", network: facts.caip2, amount: stored.amount, asset, payTo, maxTimeoutSeconds, extra },
    };
  });
  const v1 = { x402Version: 1 as const, error: V1_ERROR, accepts: accepts.map((a) => a.v1) };
  const v2 = {
    x402Version: 2 as const,
    error: V2_ERROR,
    resource: { url: resourceUrl, description: fallbackDescription, mimeType },
    accepts: accepts.map((a) => a.v2),
  };
  return { resourceUrl, accepts, v1, v2, body: JSON.stringify(v1), header: encodeHeader(v2) };
}

/**
 * The body (and v2 header) of a 403: the same offer as the 402 with the
 * reason the proof was refused, so a client can sign a fresh one.
 */
export function rejectionPayload(required: PaymentRequired, x402Version: 1 | 2, reason: string, message: string) {
  if (x402Version === 2) {
    const v2 = { ...required.v2, error: message };
    return {
      body: { x402Version: 2 as const, error: message, reason, accepts: required.v2.accepts },
      header: encodeHeader(v2),
    };
  }
  return {
    body: { x402Version: 1 as const, error: message, reason, accepts: required.v1.accepts },
    header: encodeHeader({ ...required.v2, error: message }),
  };
}
