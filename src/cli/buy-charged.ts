/**
 * Whether `cidgate buy`'s payment was taken. x402-fetch signs a new EIP-3009
 * authorization on every 402, also for a file this wallet already owns; the
 * shop then serves it on the entitlement, does not settle the new one, and its
 * receipt names the first purchase's transaction. So the receipt alone cannot
 * say "charged now": the token can, by whether the nonce just signed is used
 * (`authorizationState`, one read-only call).
 */
import { createPublicClient, type Hex, http, parseAbi } from "viem";
import { base, baseSepolia } from "viem/chains";

const abi = parseAbi(["function authorizationState(address authorizer, bytes32 nonce) view returns (bool)"]);

/** The authorization an X-PAYMENT header carries (base64 JSON), or undefined. */
export function signedAuthorization(header: string): { from: Hex; nonce: Hex } | undefined {
  try {
    const a = JSON.parse(Buffer.from(header, "base64").toString("utf8"))?.payload?.authorization;
    return typeof a?.from === "string" && typeof a?.nonce === "string" ? { from: a.from, nonce: a.nonce } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * True when the nonce was used (this buy paid), false when it is still unused
 * (served without a charge), undefined when the chain could not be asked.
 * `rpcUrl`: the local chain's, or RPC_URL; otherwise the network's public RPC.
 */
export async function wasCharged(
  network: string,
  asset: Hex,
  signed: { from: Hex; nonce: Hex },
  rpcUrl: string | undefined,
): Promise<boolean | undefined> {
  const chain = network === "base" ? base : network === "base-sepolia" ? baseSepolia : undefined;
  if (!chain && !rpcUrl) return undefined;
  try {
    const client = createPublicClient({ chain, transport: http(rpcUrl, { timeout: 5_000, retryCount: 1 }) });
    return await client.readContract({
      address: asset,
      abi,
      functionName: "authorizationState",
      args: [signed.from, signed.nonce],
    });
  } catch {
    return undefined;
  }
}
