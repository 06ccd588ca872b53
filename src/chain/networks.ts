/**
 * The networks cidgate speaks, with the facts a payment depends on.
 * The EIP-712 domain name differs per chain (X402.md): getting it wrong passes
 * a naive verify and fails at settlement, so it lives here and nowhere else.
 */
import { getAddress } from "viem";
import type { Settings } from "../settings";

export const NETWORKS = {
  base: {
    v1: "base",
    caip2: "eip155:8453",
    chainId: 8453,
    usdc: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    eip712: { name: "USD Coin", version: "2" },
  },
  "base-sepolia": {
    v1: "base-sepolia",
    caip2: "eip155:84532",
    chainId: 84532,
    usdc: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
    eip712: { name: "USDC", version: "2" },
  },
} as const;

export type NetworkName = keyof typeof NETWORKS;
export type Network = (typeof NETWORKS)[NetworkName];

/** Every spelling the API accepts, mapped to the canonical (v1) name we store. */
const SPELLINGS: Record<string, NetworkName> = {
  base: "base",
  "eip155:8453": "base",
  "base-sepolia": "base-sepolia",
  "eip155:84532": "base-sepolia",
};

export const NETWORK_SPELLINGS = Object.keys(SPELLINGS);

/** Canonical name for any accepted spelling, or undefined. */
export function canonicalNetwork(spelling: string): NetworkName | undefined {
  // Own keys only: "constructor" or "__proto__" from a client's proof must not reach Object.prototype.
  return Object.hasOwn(SPELLINGS, spelling) ? SPELLINGS[spelling] : undefined;
}

export function networkByChainId(chainId: number): NetworkName | undefined {
  return (Object.keys(NETWORKS) as NetworkName[]).find((n) => NETWORKS[n].chainId === chainId);
}

/**
 * USDC address of a network, honouring USDC_ADDRESS_BASE / USDC_ADDRESS_BASE_SEPOLIA
 * so a local chain's test token can stand in for the real contract.
 */
export function usdcAddress(
  network: NetworkName,
  settings?: Pick<Settings, "usdcAddressBase" | "usdcAddressBaseSepolia">,
): `0x${string}` {
  const override = network === "base" ? settings?.usdcAddressBase : settings?.usdcAddressBaseSepolia;
  return getAddress(override ?? NETWORKS[network].usdc);
}
