/**
 * Payment headers for the gateway benchmark, signed like the x402 clients
 * sign them (EIP-3009 TransferWithAuthorization under the requirement's
 * EIP-712 domain), built from the 402 the gateway actually sent: v1 from the
 * body's `accepts`, v2 from the PAYMENT-REQUIRED header's. Also
 * SIGN-IN-WITH-X headers over the challenge of that 402, for many wallets.
 */
import { createRequire } from "node:module";
import { createSIWxPayload, encodeSIWxHeader, formatSIWEMessage } from "@x402/extensions/sign-in-with-x";
import { getAddress, type Hex, hashMessage, keccak256 } from "viem";
import { type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { createSiweMessage } from "viem/siwe";
import type { SiwxInfo } from "../../src/x402/extensions";
import { authorizationFields } from "../../test/support/authorization";

export interface Offer {
  /** v1 requirement (body of the 402). */
  v1: {
    network: string;
    maxAmountRequired: string;
    payTo: string;
    asset: string;
    extra: { name: string; version: string };
  } & Record<string, unknown>;
  /** v2 requirement (PAYMENT-REQUIRED header of the 402) and its resource. */
  v2: {
    network: string;
    amount: string;
    payTo: string;
    asset: string;
    extra: { name: string; version: string };
  } & Record<string, unknown>;
  resource: Record<string, unknown>;
  /** The v2 402's sign-in-with-x challenge (`extensions["sign-in-with-x"].info`), when it has one. */
  siwx?: SiwxInfo;
}

/** Reads the offer out of a 402 response. */
export async function offerOf(response: Response): Promise<Offer> {
  if (response.status !== 402) throw new Error(`expected 402, got ${response.status}`);
  const body = (await response.json()) as { accepts: Offer["v1"][] };
  const header = response.headers.get("payment-required");
  if (!header) throw new Error("the 402 has no PAYMENT-REQUIRED header");
  const v2 = JSON.parse(Buffer.from(header, "base64").toString("utf8")) as {
    accepts: Offer["v2"][];
    resource: Record<string, unknown>;
    extensions?: { "sign-in-with-x"?: { info: SiwxInfo } };
  };
  return {
    v1: body.accepts[0],
    v2: v2.accepts[0],
    resource: v2.resource,
    siwx: v2.extensions?.["sign-in-with-x"]?.info,
  };
}

const TYPES = { TransferWithAuthorization: authorizationFields } as const;

export const randomNonce = (): Hex => `0x${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex")}`;

export interface Authorization {
  from: `0x${string}`;
  to: `0x${string}`;
  value: string;
  validAfter: string;
  validBefore: string;
  nonce: Hex;
}

/**
 * The gateway refuses an authorization valid for longer than the offer's
 * maxTimeoutSeconds + 30 s (issue 9, "Closing the pass"): proofs here are
 * valid for maxTimeoutSeconds + 20 s from when they are signed, long enough
 * for the phases that sign them beforehand (the forged rounds, the downloads
 * that re-present one settled proof).
 */
export const validForOf = (offer: Offer): number => Number(offer.v1.maxTimeoutSeconds ?? 60) + 20;

export function authorizationFor(
  offer: Offer,
  from: `0x${string}`,
  validForSeconds = validForOf(offer),
  nonce: Hex = randomNonce(),
): Authorization {
  const now = Math.floor(Date.now() / 1000);
  return {
    from,
    to: getAddress(offer.v1.payTo),
    value: offer.v1.maxAmountRequired,
    validAfter: String(now - 600),
    validBefore: String(now + validForSeconds),
    nonce,
  };
}

export async function sign(account: PrivateKeyAccount, offer: Offer, authorization: Authorization): Promise<Hex> {
  return account.signTypedData({
    domain: {
      name: offer.v1.extra.name,
      version: offer.v1.extra.version,
      chainId: 84532, // base-sepolia: the devnet's chain id
      verifyingContract: getAddress(offer.v1.asset),
    },
    types: TYPES,
    primaryType: "TransferWithAuthorization",
    message: {
      ...authorization,
      value: BigInt(authorization.value),
      validAfter: BigInt(authorization.validAfter),
      validBefore: BigInt(authorization.validBefore),
    },
  });
}

/** The header (name, value) a client of this version sends. */
export function proofHeader(
  version: 1 | 2,
  offer: Offer,
  signature: Hex,
  authorization: Authorization,
): [string, string] {
  const payload =
    version === 1
      ? { x402Version: 1, scheme: "exact", network: offer.v1.network, payload: { signature, authorization } }
      : { x402Version: 2, resource: offer.resource, accepted: offer.v2, payload: { signature, authorization } };
  return [version === 1 ? "X-PAYMENT" : "PAYMENT-SIGNATURE", Buffer.from(JSON.stringify(payload)).toString("base64")];
}

/** A real, payable proof: a fresh authorization signed by `account`. */
export async function paidProof(version: 1 | 2, account: PrivateKeyAccount, offer: Offer): Promise<[string, string]> {
  const authorization = authorizationFor(offer, account.address);
  return proofHeader(version, offer, await sign(account, offer, authorization), authorization);
}

// --- sign-in-with-x -----------------------------------------------------------

/** libsecp256k1 (npm `secp256k1`, as src/gateway/proof.ts loads it): signs ~5x faster than viem's pure JS. */
type Secp256k1Native = {
  privateKeyVerify(key: Uint8Array): boolean;
  publicKeyCreate(key: Uint8Array, compressed: boolean): Uint8Array;
  ecdsaSign(msg32: Uint8Array, key: Uint8Array): { signature: Uint8Array; recid: number };
};
const native: Secp256k1Native | null = (() => {
  try {
    return createRequire(import.meta.url)("secp256k1/bindings") as Secp256k1Native;
  } catch {
    return null;
  }
})();

const SIWX_CHAIN = "eip155:84532"; // base-sepolia, the devnet's chain

/**
 * One SIGN-IN-WITH-X header from `account` over the challenge, built by the
 * real client helper of `@x402/extensions` (createSIWxPayload, viem signer):
 * the reference the fast path below is checked against.
 */
export async function siwxHeaderByClient(info: SiwxInfo, account: PrivateKeyAccount): Promise<string> {
  const payload = await createSIWxPayload({ ...info, chainId: SIWX_CHAIN, type: "eip191" }, account, info.uri);
  return encodeSIWxHeader(payload);
}

/**
 * `count` SIGN-IN-WITH-X headers over one challenge, each from a new random
 * wallet (the server accepts one sign-in per nonce and address, and the
 * nonce is one per resource and minute: distinct headers need distinct
 * wallets). The EIP-4361 text is written by viem's `createSiweMessage` (what
 * the server verifies against; checked here to equal the `@x402/extensions`
 * client's text for the first wallet) and signed with libsecp256k1 when it
 * loads (viem otherwise). Returns the wallets' addresses and their headers.
 */
export async function siwxHeaders(info: SiwxInfo, count: number): Promise<{ addresses: string[]; headers: string[] }> {
  const addresses: string[] = [];
  const headers: string[] = [];
  const chainId = Number(SIWX_CHAIN.slice("eip155:".length));
  for (let i = 0; i < count; i++) {
    let key: Uint8Array;
    do key = crypto.getRandomValues(new Uint8Array(32));
    while (native && !native.privateKeyVerify(key));
    const keyHex = `0x${Buffer.from(key).toString("hex")}` as Hex;
    const address = native
      ? getAddress(`0x${keccak256(native.publicKeyCreate(key, false).subarray(1)).slice(-40)}`)
      : privateKeyToAccount(keyHex).address;
    const message = createSiweMessage({
      domain: info.domain,
      address,
      statement: info.statement,
      uri: info.uri,
      version: "1",
      chainId,
      nonce: info.nonce,
      issuedAt: new Date(info.issuedAt),
      expirationTime: info.expirationTime === undefined ? undefined : new Date(info.expirationTime),
      notBefore: info.notBefore === undefined ? undefined : new Date(info.notBefore),
      resources: info.resources,
    });
    if (i === 0 && message !== formatSIWEMessage({ ...info, chainId: SIWX_CHAIN, type: "eip191" }, address)) {
      throw new Error("viem's EIP-4361 text differs from @x402/extensions' for the same challenge");
    }
    let signature: Hex;
    if (native) {
      const { signature: rs, recid } = native.ecdsaSign(Buffer.from(hashMessage(message).slice(2), "hex"), key);
      signature = `0x${Buffer.from(rs).toString("hex")}${(27 + recid).toString(16)}`;
    } else {
      signature = await privateKeyToAccount(keyHex).signMessage({ message });
    }
    addresses.push(address);
    headers.push(encodeSIWxHeader({ ...info, chainId: SIWX_CHAIN, type: "eip191", address, signature }));
  }
  return { addresses, headers };
}
