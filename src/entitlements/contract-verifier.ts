/**
 * Smart-wallet sign-ins (EIP-1271, EIP-6492) checked on chain through
 * RPC_URL: viem's `verifyMessage` asks the wallet contract (or simulates its
 * deployment) whether it accepts the signature. Only for the chain the RPC
 * serves; any other chain is "not accepted", never a guess.
 */
import { createPublicClient, http } from "viem";
import type { ContractVerifier } from "./siwx";

export function contractVerifier(rpcUrl: string, timeoutMs: number): ContractVerifier {
  const client = createPublicClient({ transport: http(rpcUrl, { timeout: timeoutMs, retryCount: 1 }) });
  let chainId: Promise<number> | undefined;
  return async ({ address, message, signature, chainId: wanted }) => {
    chainId ??= client.getChainId().catch((e) => {
      chainId = undefined; // asked again next time: the RPC may be back
      throw e;
    });
    if ((await chainId) !== wanted) return false;
    return client.verifyMessage({ address, message, signature });
  };
}
