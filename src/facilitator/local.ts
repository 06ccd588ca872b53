/**
 * The self-hosted facilitator: verify and settle for scheme `exact` on EVM,
 * v1 and v2, against one RPC with one relayer key. Used in-process by the
 * gateway (FACILITATOR_URL=local) and over HTTP by `cidgate facilitator`
 * (routes.ts). See verify.ts for what is checked and by whose code, settle.ts
 * for how a payment reaches the chain.
 */
import { getAddress, type Hex } from "viem";
import { NETWORKS, type NetworkName } from "../chain/networks";
import type { Settings } from "../settings";
import { parseFacilitatorRequest } from "../x402/facilitator-request";
import { Reason } from "../x402/reasons";
import { type ChainSettler, createChainSettler, type SettlementLog } from "./chain-settler";
import { createRelayer, type Relayer } from "./relayer";
import {
  type Facilitator,
  type FacilitatorRequest,
  FacilitatorUnavailableError,
  type SettleResponse,
  type SupportedResponse,
  type VerifyResponse,
} from "./types";
import { createVerifier } from "./verify";

export interface LocalFacilitatorOptions {
  rpcUrl: string;
  relayerPrivateKey: Hex;
  /** Networks served (canonical names); default settings.facilitatorNetworks. */
  networks?: readonly NetworkName[];
  settings: Pick<Settings, "receiptTimeoutSeconds" | "facilitatorNetworks">;
  /** Bound on one RPC request, ms (default 10 s). */
  rpcTimeoutMs?: number;
  /** Settlement failures on our side (relayer out of gas, receipt timeouts); never payment proofs. */
  log?: SettlementLog;
}

export type LocalFacilitator = Facilitator & {
  /** The relayer's address (pays gas). */
  readonly relayerAddress: `0x${string}`;
  /** Chain id of the RPC (asked once); FacilitatorUnavailableError when it does not answer. */
  chainId(): Promise<number>;
  /** One fresh RPC call (the chain id is asked once): what /readyz asks (http/health.ts). */
  ping(): Promise<unknown>;
  /** Forgets cached chain state; the facilitator holds no sockets or timers. */
  close(): void;
};

export function createLocalFacilitator(options: LocalFacilitatorOptions): LocalFacilitator {
  const networks = [...(options.networks ?? options.settings.facilitatorNetworks)];
  const receiptTimeoutMs = options.settings.receiptTimeoutSeconds * 1000;
  const probe = createRelayer({
    rpcUrl: options.rpcUrl,
    relayerPrivateKey: options.relayerPrivateKey,
    chainId: 1,
    receiptTimeoutMs,
    rpcTimeoutMs: options.rpcTimeoutMs,
  });

  // The chain id is asked once, on first use, and retried after a failure:
  // the facilitator may start before its RPC does.
  let chain: Promise<{ chainId: number; relayer: Relayer; settle: ChainSettler }> | undefined;
  function connect() {
    chain ??= (async () => {
      let chainId: number;
      try {
        chainId = await probe.publicClient.getChainId();
      } catch {
        throw new FacilitatorUnavailableError("the facilitator's RPC did not answer eth_chainId");
      }
      const relayer = createRelayer({
        rpcUrl: options.rpcUrl,
        relayerPrivateKey: options.relayerPrivateKey,
        chainId,
        receiptTimeoutMs,
        rpcTimeoutMs: options.rpcTimeoutMs,
      });
      return { chainId, relayer, settle: createChainSettler(relayer, receiptTimeoutMs, options.log) };
    })().catch((e) => {
      chain = undefined;
      throw e;
    });
    return chain;
  }

  const verifyPayment = createVerifier({
    networks,
    chain: async () => {
      const c = await connect();
      return { chainId: c.chainId, signer: c.relayer.signer };
    },
  });

  function parse(request: FacilitatorRequest): FacilitatorRequest | undefined {
    const parsed = parseFacilitatorRequest(request);
    return parsed.ok ? parsed.request : undefined;
  }

  function payerOf(request: FacilitatorRequest): string | undefined {
    const from = (request.paymentPayload as { payload?: { authorization?: { from?: unknown } } })?.payload
      ?.authorization?.from;
    return typeof from === "string" ? from : undefined;
  }

  async function verify(request: FacilitatorRequest): Promise<VerifyResponse> {
    const parsed = parse(request);
    if (!parsed) return { isValid: false, invalidReason: Reason.invalidPayload, payer: payerOf(request) };
    return (await verifyPayment(parsed)).response;
  }

  async function settle(request: FacilitatorRequest): Promise<SettleResponse> {
    const parsed = parse(request);
    const network = String((request.paymentRequirements as { network?: unknown })?.network ?? "");
    if (!parsed) {
      return { success: false, errorReason: Reason.invalidPayload, transaction: "", network, payer: payerOf(request) };
    }
    const { chainId, settle: settleAuthorization } = await connect();
    const auth = parsed.paymentPayload.payload.authorization;
    return settleAuthorization(
      {
        chainId,
        asset: getAddress(parsed.paymentRequirements.asset),
        payer: getAddress(auth.from),
        to: getAddress(auth.to),
        value: BigInt(auth.value),
        nonce: auth.nonce as Hex,
      },
      network,
      async () => {
        const { response, payment } = await verifyPayment(parsed);
        return { payment, invalidReason: response.invalidReason };
      },
    );
  }

  async function supported(): Promise<SupportedResponse & { extensions: string[]; signers: Record<string, string[]> }> {
    const kinds = networks.flatMap((n) => [
      { x402Version: 1, scheme: "exact", network: NETWORKS[n].v1 },
      { x402Version: 2, scheme: "exact", network: NETWORKS[n].caip2 },
    ]);
    return { kinds, extensions: [], signers: { "eip155:*": [probe.address] } };
  }

  return {
    verify,
    settle,
    supported,
    // Success only for a mined, successful transaction carrying the Transfer (chain-settler.ts).
    confirmsOnChain: true,
    relayerAddress: probe.address,
    chainId: async () => (await connect()).chainId,
    ping: () => probe.publicClient.getBlockNumber({ cacheTime: 0 }),
    close() {
      chain = undefined;
    },
  };
}
