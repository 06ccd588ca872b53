/**
 * Builds real x402 payments for facilitator tests: EIP-3009 authorizations
 * (test/support/authorization.ts) signed under the token's EIP-712 domain, wrapped as the v1 or v2
 * request body of POST /verify and /settle. Overrides let a test forge one
 * field at a time (after signing, for tampering; before, for honest variants).
 */
import { type Address, createPublicClient, erc20Abi, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { Devnet } from "../../src/chain/devnet";
import type { FacilitatorRequest } from "../../src/facilitator/types";
import { authorizationTypedData, randomNonce } from "../support/authorization";

export interface PaymentOptions {
  version?: 1 | 2;
  buyerKey?: Hex;
  payTo?: Address;
  amount?: bigint;
  /** What the buyer signs (defaults follow the requirement). */
  sign?: Partial<{
    to: Address;
    value: bigint;
    validAfter: bigint;
    validBefore: bigint;
    nonce: Hex;
    name: string;
    version: string;
    chainId: number;
    verifyingContract: Address;
  }>;
  /** Replaces fields of the authorization after signing (tampering). */
  tamper?: Partial<Record<"from" | "to" | "value" | "validAfter" | "validBefore" | "nonce", string>>;
  requirement?: Partial<{ network: string; asset: Address; payTo: Address; name: string; version: string }>;
  payloadNetwork?: string;
  /** Signs with this function instead of the buyer key (smart wallets). */
  from?: Address;
  signer?: (typed: any) => Promise<Hex>;
}

export async function payment(devnet: Devnet, o: PaymentOptions = {}): Promise<FacilitatorRequest> {
  const version = o.version ?? 1;
  const buyer = privateKeyToAccount(o.buyerKey ?? devnet.buyers[0].privateKey);
  const from = o.from ?? buyer.address;
  const payTo = o.requirement?.payTo ?? o.payTo ?? devnet.seller.address;
  const amount = o.amount ?? 10_000n;
  const asset = o.requirement?.asset ?? devnet.token;
  const name = o.requirement?.name ?? "USDC";
  const tokenVersion = o.requirement?.version ?? "2";
  const network = o.requirement?.network ?? (version === 1 ? "base-sepolia" : "eip155:84532");
  const now = BigInt(Math.floor(Date.now() / 1000));
  const message = {
    from,
    to: o.sign?.to ?? payTo,
    value: o.sign?.value ?? amount,
    validAfter: o.sign?.validAfter ?? now - 600n,
    validBefore: o.sign?.validBefore ?? now + 60n,
    nonce: o.sign?.nonce ?? randomNonce(),
  };
  const typed = authorizationTypedData(
    {
      name: o.sign?.name ?? name,
      version: o.sign?.version ?? tokenVersion,
      chainId: o.sign?.chainId ?? devnet.chainId,
      verifyingContract: o.sign?.verifyingContract ?? asset,
    },
    message,
  );
  const signature = o.signer ? await o.signer(typed) : await buyer.signTypedData(typed);
  const authorization = {
    from: message.from,
    to: message.to,
    value: message.value.toString(),
    validAfter: message.validAfter.toString(),
    validBefore: message.validBefore.toString(),
    nonce: message.nonce,
    ...o.tamper,
  };
  const extra = { name, version: tokenVersion };
  if (version === 1) {
    const requirements = {
      scheme: "exact",
      network,
      maxAmountRequired: amount.toString(),
      resource: "http://127.0.0.1:4021/x402/cid/bafkreitest",
      description: "test",
      mimeType: "text/plain",
      payTo,
      maxTimeoutSeconds: 60,
      asset,
      extra,
    };
    return {
      x402Version: 1,
      paymentPayload: {
        x402Version: 1,
        scheme: "exact",
        network: o.payloadNetwork ?? network,
        payload: { signature, authorization },
      },
      paymentRequirements: requirements,
    };
  }
  const requirements = {
    scheme: "exact",
    network,
    amount: amount.toString(),
    asset,
    payTo,
    maxTimeoutSeconds: 60,
    extra,
  };
  return {
    x402Version: 2,
    paymentPayload: {
      x402Version: 2,
      resource: { url: "http://127.0.0.1:4021/x402/cid/bafkreitest", description: "test", mimeType: "text/plain" },
      accepted: { ...requirements, network: o.payloadNetwork ?? network },
      payload: { signature, authorization },
    },
    paymentRequirements: requirements,
  };
}

export function balances(devnet: Devnet) {
  const client = createPublicClient({ transport: http(devnet.rpcUrl) });
  return (address: Address) =>
    client.readContract({ address: devnet.token, abi: erc20Abi, functionName: "balanceOf", args: [address] });
}

export function txCount(devnet: Devnet, address: Address) {
  const client = createPublicClient({ transport: http(devnet.rpcUrl) });
  return client.getTransactionCount({ address, blockTag: "pending" });
}

/**
 * An OBSERVATION and FAULT proxy in front of a real JSON-RPC endpoint (anvil):
 * every request is forwarded as is and the answer returned as is, while the
 * JSON-RPC methods called are recorded in `calls` (batches counted per call).
 * Setting `down = true` injects one fault: the RPC answers HTTP 503 with no
 * JSON-RPC body, as an unreachable or overloaded node would. It never makes
 * up a successful answer.
 */
export function rpcProxy(target: string) {
  const state = { calls: [] as string[], down: false };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const body = await req.text();
      try {
        const parsed = JSON.parse(body) as { method?: string } | { method?: string }[];
        for (const c of Array.isArray(parsed) ? parsed : [parsed]) state.calls.push(String(c.method));
      } catch {
        state.calls.push("(not json)");
      }
      if (state.down) return new Response("rpc down (injected fault)", { status: 503 });
      const res = await fetch(target, { method: "POST", headers: { "content-type": "application/json" }, body });
      return new Response(await res.arrayBuffer(), {
        status: res.status,
        headers: { "content-type": res.headers.get("content-type") ?? "application/json" },
      });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    state,
    stop: () => server.stop(true),
  };
}
