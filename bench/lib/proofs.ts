/**
 * Payment headers for the gateway benchmark, signed like the x402 clients
 * sign them (EIP-3009 TransferWithAuthorization under the requirement's
 * EIP-712 domain), built from the 402 the gateway actually sent: v1 from the
 * body's `accepts`, v2 from the PAYMENT-REQUIRED header's.
 */
import { getAddress, type Hex } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";

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
  };
  return { v1: body.accepts[0], v2: v2.accepts[0], resource: v2.resource };
}

const TYPES = {
  TransferWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
} as const;

export const randomNonce = (): Hex => `0x${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex")}`;

export interface Authorization {
  from: `0x${string}`;
  to: `0x${string}`;
  value: string;
  validAfter: string;
  validBefore: string;
  nonce: Hex;
}

export function authorizationFor(
  offer: Offer,
  from: `0x${string}`,
  validForSeconds = 600,
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
