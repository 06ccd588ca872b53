/**
 * EIP-3009 authorizations for tests, signed the way x402 clients sign them:
 * EIP-712 typed data under the token's domain (for USDC: name, version "2",
 * chain id, token address). One definition of the signed struct, so every
 * test that signs or hashes a payment signs the same thing.
 */
import { type Address, type Hex, toHex } from "viem";
import type { LocalAccount } from "viem/accounts";

export const authorizationFields = [
  { name: "from", type: "address" },
  { name: "to", type: "address" },
  { name: "value", type: "uint256" },
  { name: "validAfter", type: "uint256" },
  { name: "validBefore", type: "uint256" },
  { name: "nonce", type: "bytes32" },
] as const;

/** transferWithAuthorization (anyone may submit it) or receiveWithAuthorization (only the payee). */
export type AuthorizationKind = "TransferWithAuthorization" | "ReceiveWithAuthorization";

export interface AuthorizationDomain {
  name: string;
  version: string;
  chainId: number;
  verifyingContract: Address;
}

export interface Authorization {
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
}

export const randomNonce = (): Hex => toHex(crypto.getRandomValues(new Uint8Array(32)));

/** The typed data a payer signs (or an ERC-1271 wallet's owner hashes). */
export function authorizationTypedData<K extends AuthorizationKind = "TransferWithAuthorization">(
  domain: AuthorizationDomain,
  message: Authorization,
  primaryType: K = "TransferWithAuthorization" as K,
) {
  return {
    domain,
    types: { [primaryType]: authorizationFields } as Record<K, typeof authorizationFields>,
    primaryType,
    message,
  };
}

export function signAuthorization(
  account: LocalAccount,
  domain: AuthorizationDomain,
  message: Authorization,
  primaryType: AuthorizationKind = "TransferWithAuthorization",
): Promise<Hex> {
  // One literal primary type per call, so viem checks the message against the struct.
  return primaryType === "TransferWithAuthorization"
    ? account.signTypedData(authorizationTypedData(domain, message))
    : account.signTypedData(authorizationTypedData(domain, message, "ReceiveWithAuthorization"));
}
