/**
 * The facilitator's view of one chain: a public client for reads and a
 * relayer wallet (the key that pays gas) behind viem's nonce manager, so
 * concurrent settlements never reuse an account nonce. Packaged as the
 * FacilitatorEvmSigner that @x402/evm's verify code expects.
 *
 * Every RPC call is bounded (http timeout), and receipt waits are bounded by
 * RECEIPT_TIMEOUT_SECONDS. On a loopback RPC (the devnet) receipts are polled
 * every few ms instead of viem's default of seconds.
 */
import type { FacilitatorEvmSigner } from "@x402/evm";
import { createNonceManager, createPublicClient, createWalletClient, defineChain, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { jsonRpc } from "viem/nonce";

export interface RelayerOptions {
  rpcUrl: string;
  relayerPrivateKey: Hex;
  /** Chain id the RPC is expected to serve (checked separately, see local.ts). */
  chainId: number;
  /** Bound on one receipt wait, ms. */
  receiptTimeoutMs: number;
  /** Bound on one RPC request, ms. */
  rpcTimeoutMs?: number;
}

/** True for an RPC on this machine: blocks come in ms, so poll in ms. */
export function isLoopbackRpc(rpcUrl: string): boolean {
  const host = new URL(rpcUrl).hostname;
  return host === "localhost" || host === "[::1]" || host === "::1" || /^127\./.test(host);
}

export function createRelayer(options: RelayerOptions) {
  const local = isLoopbackRpc(options.rpcUrl);
  const pollingInterval = local ? 5 : 250;
  // A chain object without fee or formatter quirks: the RPC is the source of truth.
  const chain = defineChain({
    id: options.chainId,
    name: `eip155:${options.chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [options.rpcUrl] } },
  });
  const transport = http(options.rpcUrl, { timeout: options.rpcTimeoutMs ?? 10_000, retryCount: local ? 0 : 2 });
  const publicClient = createPublicClient({ chain, transport, pollingInterval });
  // One nonce manager per relayer (not viem's process-wide default), so each
  // facilitator instance tracks its own pending nonces.
  const account = privateKeyToAccount(options.relayerPrivateKey, {
    nonceManager: createNonceManager({ source: jsonRpc() }),
  });
  const wallet = createWalletClient({ account, chain, transport, pollingInterval });

  const signer: FacilitatorEvmSigner = {
    getAddresses: () => [account.address],
    readContract: (args) => publicClient.readContract(args as Parameters<typeof publicClient.readContract>[0]),
    verifyTypedData: (args) => publicClient.verifyTypedData(args as Parameters<typeof publicClient.verifyTypedData>[0]),
    writeContract: (args) =>
      wallet.writeContract({ ...(args as Parameters<typeof wallet.writeContract>[0]), account, chain }),
    sendTransaction: (args) => wallet.sendTransaction({ ...args, account, chain }),
    waitForTransactionReceipt: (args) =>
      publicClient.waitForTransactionReceipt({
        ...args,
        timeout: args.timeout ?? options.receiptTimeoutMs,
        pollingInterval,
      }),
    getCode: (args) => publicClient.getCode(args),
  };

  return { address: account.address, chain, publicClient, wallet, signer, pollingInterval };
}

export type Relayer = ReturnType<typeof createRelayer>;
