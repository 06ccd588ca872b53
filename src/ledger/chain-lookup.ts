/**
 * The settler's window on the chain (RPC_URL): what became of a payment
 * row's authorization, for resolving an unconfirmed settlement. Only rows
 * on the network the RPC serves are looked up; others get undefined.
 */
import { type AuthorizationFinding, createAuthorizationLookup } from "../chain/authorization";
import { NETWORKS, type NetworkName } from "../chain/networks";
import type { Settings } from "../settings";
import type { Payment } from "./store";

export function paymentLookup(
  settings: Pick<Settings, "rpcUrl" | "facilitatorTimeoutMs">,
): ((row: Payment) => Promise<AuthorizationFinding | undefined>) | undefined {
  if (!settings.rpcUrl) return undefined;
  const chain = createAuthorizationLookup({
    rpcUrl: settings.rpcUrl,
    rpcTimeoutMs: Math.min(10_000, settings.facilitatorTimeoutMs),
  });
  return async (row) => {
    const network = NETWORKS[row.network as NetworkName];
    if (!network || (await chain.chainId()) !== network.chainId) return undefined;
    return chain.find({
      asset: row.asset as `0x${string}`,
      authorizer: row.payer as `0x${string}`,
      nonce: row.nonce as `0x${string}`,
      payTo: row.payTo as `0x${string}`,
      minValue: BigInt(row.amount),
      since: Math.floor(Date.parse(row.createdAt) / 1000),
    });
  };
}
