/**
 * The payment proof: decode X-PAYMENT (v1) or PAYMENT-SIGNATURE (v2), match
 * it to one requirement we offered, and check it locally (recipient, amount,
 * time window, EIP-712 signature) before anything goes over the network.
 * A forged proof must never cost a facilitator call. No HTTP types here.
 */
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { domainSeparator, type Hex, recoverAddress, keccak256 as viemKeccak256 } from "viem";
import { checksum } from "../chain/address";
import { keccak256, keccak256Hex } from "../chain/keccak";
import { canonicalNetwork, NETWORKS, type NetworkName } from "../chain/networks";
import { type ExactEvmPayload, type PaymentPayload, PaymentPayloadV1, PaymentPayloadV2 } from "../x402/models";
import { Reason, valueReason } from "../x402/reasons";
import type { AcceptedRequirement } from "./requirements";

const checkV1 = TypeCompiler.Compile(PaymentPayloadV1);
const checkV2 = TypeCompiler.Compile(PaymentPayloadV2);

/** A proof that decoded and has the shape of an `exact` EVM payment. */
export interface DecodedProof {
  x402Version: 1 | 2;
  /** As decoded: forwarded to the facilitator unchanged. */
  raw: PaymentPayload;
  scheme: string;
  /** Spelling the client used, and our canonical name for it (undefined: not a network we take). */
  networkSpelling: string;
  network: NetworkName | undefined;
  signature: Hex;
  from: `0x${string}`;
  to: `0x${string}`;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  /** Lower-case 0x + 64 hex. */
  nonce: Hex;
  /** sha256 of the signature: tells a re-presented proof from another one with the same nonce. */
  proofHash: string;
}

export interface ProofRejection {
  reason: string;
  message: string;
}

export type Result<T> = { ok: true; value: T } | { ok: false; rejection: ProofRejection };

const reject = (reason: string, message: string): { ok: false; rejection: ProofRejection } => ({
  ok: false,
  rejection: { reason, message },
});

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** Clock skew allowed past now + maxTimeoutSeconds when capping an authorization's validBefore. */
export const VALID_BEFORE_SKEW_SECONDS = 30n;
const MAX_HEADER = 32 * 1024;

/**
 * Decodes a proof header. `header` is the value of PAYMENT-SIGNATURE or
 * X-PAYMENT; the version inside the JSON decides the shape.
 */
export function decodeProof(header: string): Result<DecodedProof> {
  const text = header.trim();
  if (text.length === 0 || text.length > MAX_HEADER || !BASE64.test(text)) {
    return reject(Reason.invalidPayload, "the payment header is not base64");
  }
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(text, "base64").toString("utf8"));
  } catch {
    return reject(Reason.invalidPayload, "the payment header is not base64 JSON");
  }
  let scheme: string;
  let networkSpelling: string;
  let payload: ExactEvmPayload;
  if (checkV1.Check(json)) {
    ({ scheme, network: networkSpelling, payload } = json);
  } else if (checkV2.Check(json)) {
    ({ scheme, network: networkSpelling } = json.accepted);
    payload = json.payload;
  } else {
    return reject(Reason.invalidPayload, "the payment header is not an x402 v1 or v2 exact EVM payment");
  }
  const a = payload.authorization;
  return {
    ok: true,
    value: {
      x402Version: json.x402Version,
      raw: json,
      scheme,
      networkSpelling,
      network: canonicalNetwork(networkSpelling),
      signature: payload.signature as Hex,
      from: checksum(a.from),
      to: checksum(a.to),
      value: BigInt(a.value),
      validAfter: BigInt(a.validAfter),
      validBefore: BigInt(a.validBefore),
      nonce: a.nonce.toLowerCase() as Hex,
      proofHash: createHash("sha256").update(payload.signature.toLowerCase()).digest("hex"),
    },
  };
}

/**
 * Picks the requirement this proof pays, by scheme, network, asset and
 * pay-to (v2 names all of them in `accepted`; v1 names only the network, so
 * the signature's domain tells the asset apart when several share one).
 * Then checks amount, time window and signature without any network call.
 */
export async function matchAndCheck(
  proof: DecodedProof,
  accepts: readonly AcceptedRequirement[],
  nowSeconds: number = Math.floor(Date.now() / 1000),
): Promise<Result<AcceptedRequirement>> {
  if (proof.scheme !== "exact") return reject(Reason.unsupportedScheme, `scheme "${proof.scheme}" is not offered`);
  if (!proof.network || !accepts.some((r) => r.network === proof.network)) {
    return reject(Reason.invalidNetwork, `network "${proof.networkSpelling}" is not offered for this content`);
  }
  let candidates = accepts.filter((r) => r.network === proof.network);
  if (proof.x402Version === 2) {
    const accepted = (proof.raw as PaymentPayloadV2).accepted;
    const asset = checksum(accepted.asset);
    const payTo = checksum(accepted.payTo);
    const amount = BigInt(accepted.amount);
    candidates = candidates.filter((r) => r.asset === asset && r.payTo === payTo && r.amount === amount);
    if (candidates.length === 0) {
      return reject(Reason.noMatchingRequirement, "the accepted requirement is not one this content offers");
    }
  }
  candidates = candidates.filter((r) => r.payTo === proof.to);
  if (candidates.length === 0) {
    return reject(Reason.recipientMismatch, "the authorization pays someone else");
  }
  // v1 lets a client pay at least the price; v2 pays exactly the price.
  candidates = candidates.filter((r) => (proof.x402Version === 1 ? proof.value >= r.amount : proof.value === r.amount));
  if (candidates.length === 0) {
    return reject(
      valueReason(proof.x402Version),
      proof.x402Version === 1
        ? "the authorization pays less than the price"
        : "the authorization does not pay exactly the price",
    );
  }
  const now = BigInt(nowSeconds);
  if (proof.validBefore <= now) return reject(Reason.validBefore, "the authorization has expired");
  // The buyer picks validBefore, and a settled proof is served again until then: uncapped, one
  // payment would be a pass anyone holding the header could use for ever (X402.md, trap 4).
  const longest = now + BigInt(candidates[0].v2.maxTimeoutSeconds ?? 0) + VALID_BEFORE_SKEW_SECONDS;
  if (proof.validBefore > longest) {
    return reject(
      Reason.validBefore,
      "the authorization is valid for longer than this offer's maxTimeoutSeconds allows",
    );
  }
  if (proof.validAfter > now) return reject(Reason.validAfter, "the authorization is not valid yet");

  const sigBytes = (proof.signature.length - 2) / 2;
  if (sigBytes > 65) {
    // A smart wallet (ERC-1271 / ERC-6492): only the chain can check it; the facilitator does.
    return { ok: true, value: candidates[0] };
  }
  if (sigBytes !== 65) return reject(Reason.signature, "the signature is malformed");
  for (const candidate of candidates) {
    if ((await recoverSigner(proof, candidate)) === proof.from.toLowerCase()) return { ok: true, value: candidate };
  }
  return reject(Reason.signature, "the signature does not match the authorization");
}

/*
 * The EIP-712 digest the token contract checks, computed by hand: viem's
 * generic hashTypedData re-derives the type encoding on every call (~80 us);
 * here the type hash and each (network, asset) domain separator are computed
 * once and the struct is one keccak over fixed-width words. A test checks it
 * against viem's hashTypedData.
 */
const TRANSFER_WITH_AUTHORIZATION_TYPEHASH = keccak256Hex(
  Buffer.from(
    "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)",
  ),
).slice(2);
const separators = new Map<string, string>();

function separatorOf(network: NetworkName, asset: `0x${string}`): string {
  const key = `${network}|${asset}`;
  let hit = separators.get(key);
  if (!hit) {
    const facts = NETWORKS[network];
    hit = domainSeparator({
      domain: {
        name: facts.eip712.name,
        version: facts.eip712.version,
        chainId: facts.chainId,
        verifyingContract: asset,
      },
    }).slice(2);
    separators.set(key, hit);
  }
  return hit;
}

const word = (n: bigint) => n.toString(16).padStart(64, "0");
const addressWord = (a: string) => a.slice(2).toLowerCase().padStart(64, "0");

/** Digest the token contract checks: EIP-712 TransferWithAuthorization under the asset's domain on this network. */
export function authorizationDigest(
  proof: DecodedProof,
  requirement: Pick<AcceptedRequirement, "network" | "asset">,
): Hex {
  const struct = hexKeccak(
    `${TRANSFER_WITH_AUTHORIZATION_TYPEHASH}${addressWord(proof.from)}${addressWord(proof.to)}${word(proof.value)}${word(proof.validAfter)}${word(proof.validBefore)}${proof.nonce.slice(2)}`,
  ).slice(2);
  return hexKeccak(`1901${separatorOf(requirement.network, requirement.asset)}${struct}`);
}

/**
 * keccak256 of bare hex, as viem's `keccak256("0x" + hex)`: native (chain/keccak.ts, ~2 us
 * against ~40 us in JS) for whole bytes; anything else (a value past 2^256 makes an odd-length
 * word, which viem pads and Buffer would cut) goes to viem, so the digest never differs.
 */
function hexKeccak(hex: string): Hex {
  return hex.length % 2 === 0 && /^[0-9a-fA-F]*$/.test(hex)
    ? keccak256Hex(Buffer.from(hex, "hex"))
    : viemKeccak256(`0x${hex}`);
}

/*
 * Public-key recovery costs about half a millisecond of pure JS; a client
 * (or an attacker) repeating one proof should not pay that each time. The
 * signer is a pure function of what was signed and the signature, so
 * memoizing by those exact fields is exact, and skips the hashing too.
 */
const RECOVERED_MAX = 10_000;
const recovered = new Map<string, `0x${string}` | null>();

/*
 * libsecp256k1 through N-API (npm `secp256k1`, prebuilt for linux-x64,
 * darwin-arm64 and win32-x64, so nothing compiles at install) recovers a key
 * in ~50 us against ~600 us for viem's pure JS: the difference between ~1,000
 * and ~5,000 forged proofs refused per second on one core. `secp256k1/bindings`
 * is loaded directly: the package's own entry silently falls back to
 * `elliptic`, slower than viem. Where the addon does not load, viem it is.
 */
export type NativeSecp256k1 = {
  ecdsaRecover(sig: Uint8Array, recid: number, msg32: Uint8Array, compressed: boolean): Uint8Array;
};
export const nativeSecp256k1: NativeSecp256k1 | null = (() => {
  try {
    return createRequire(import.meta.url)("secp256k1/bindings") as NativeSecp256k1;
  } catch {
    return null;
  }
})();

/**
 * The address that signed `hash` (32 bytes, or their 0x hex; 65-byte r||s||v
 * signature), in lower case (no checksum: one keccak less), or null when
 * nothing can be recovered. `native` null takes viem's pure-JS path (the
 * fallback; tests compare both).
 */
export async function recoverLowerCase(
  hash: Hex | Uint8Array,
  signature: Hex,
  native = nativeSecp256k1,
): Promise<`0x${string}` | null> {
  try {
    if (!native) {
      const hex = typeof hash === "string" ? hash : (`0x${Buffer.from(hash).toString("hex")}` as Hex);
      return (await recoverAddress({ hash: hex, signature })).toLowerCase() as `0x${string}`;
    }
    const sig = Buffer.from(signature.slice(2), "hex");
    if (sig.length !== 65) return null;
    // v as viem takes it: 27/28 or the bare recovery bit 0/1.
    const v = sig[64] >= 27 ? sig[64] - 27 : sig[64];
    if (v !== 0 && v !== 1) return null;
    const digest = typeof hash === "string" ? Buffer.from(hash.slice(2), "hex") : hash;
    if (digest.length !== 32) return null;
    const publicKey = native.ecdsaRecover(sig.subarray(0, 64), v, digest, false);
    // The address is the last 20 bytes of keccak(x || y): native keccak, ~1.5 us against ~40 in JS.
    return `0x${Buffer.from(keccak256(publicKey.subarray(1))).toString("hex", 12)}`;
  } catch {
    return null;
  }
}

/** Lower-case address that signed this authorization for this requirement, or null. */
async function recoverSigner(proof: DecodedProof, requirement: AcceptedRequirement): Promise<`0x${string}` | null> {
  const key = `${requirement.network}|${requirement.asset}|${proof.from}|${proof.to}|${proof.value}|${proof.validAfter}|${proof.validBefore}|${proof.nonce}|${proof.signature.toLowerCase()}`;
  const hit = recovered.get(key);
  if (hit !== undefined) return hit;
  const signer = await recoverLowerCase(authorizationDigest(proof, requirement), proof.signature);
  if (recovered.size >= RECOVERED_MAX) recovered.delete(recovered.keys().next().value as string);
  recovered.set(key, signer);
  return signer;
}
