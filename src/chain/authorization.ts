/**
 * What became of one EIP-3009 authorization, read from the chain: the
 * gateway asks when a settle went out but its answer never came back (a
 * timeout, a lost response, a transaction not mined in time), so it can
 * serve a buyer who did pay instead of re-verifying a spent nonce.
 *
 * The token says whether the nonce is used (`authorizationState`); if so,
 * its `AuthorizationUsed(authorizer, nonce)` event names the transaction,
 * which must have succeeded and carry Transfer(from = payer, to = payTo,
 * value >= amount) of that token. Logs are searched backwards in windows
 * no older than the claim (a nonce the facilitator verified unused at claim
 * time was used after it), so RPCs with a getLogs range limit still answer.
 */
import {
  createPublicClient,
  erc20Abi,
  type Hex,
  http,
  isAddressEqual,
  type PublicClient,
  parseAbi,
  parseEventLogs,
  TransactionReceiptNotFoundError,
} from "viem";

const eip3009Abi = parseAbi([
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
  "event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce)",
]);

export interface AuthorizationQuery {
  asset: `0x${string}`;
  authorizer: `0x${string}`;
  nonce: Hex;
  payTo: `0x${string}`;
  /** Smallest transfer that counts as this payment (smallest unit). */
  minValue: bigint;
  /** Unix seconds before which the authorization was certainly unused (the claim's time). */
  since: number;
}

export type AuthorizationFinding =
  /** Nonce unused. `chainTime`: the latest block's timestamp (is the authorization still usable?). */
  | { state: "unused"; chainTime: number }
  /** Used by a successful transaction that paid payTo at least minValue. */
  | { state: "paid"; txHash: Hex }
  /** Used or canceled, but not by a transfer to payTo: this authorization never pays us. */
  | { state: "spent"; detail: string }
  /** Used, but neither its transaction nor its cancellation was found within the search bounds. */
  | { state: "unknown"; detail: string };

/** What a settlement transaction a facilitator named shows on chain (one receipt read). */
export type SettlementCheck =
  /** Mined, succeeded, and carries both events of this authorization. */
  | { state: "confirmed" }
  /** The chain has no receipt for it: never sent, not mined yet, or invented. */
  | { state: "absent" }
  /** Mined, but it failed or does not carry this authorization's events. */
  | { state: "mismatch"; detail: string };

export interface AuthorizationLookupOptions {
  rpcUrl: string;
  /** Bound on one RPC request, ms. */
  rpcTimeoutMs?: number;
  /** Blocks per getLogs window (RPC providers often cap the range). */
  window?: number;
  /** Windows searched at most before giving up. */
  maxWindows?: number;
  /** Allowed clock difference between this host and the chain, s. */
  slackSeconds?: number;
}

export function createAuthorizationLookup(options: AuthorizationLookupOptions) {
  const client: PublicClient = createPublicClient({
    transport: http(options.rpcUrl, { timeout: options.rpcTimeoutMs ?? 10_000, retryCount: 1 }),
  });
  const windowSize = BigInt(options.window ?? 2000);
  const maxWindows = options.maxWindows ?? 50;
  const slack = BigInt(options.slackSeconds ?? 300);
  let chainId: Promise<number> | undefined;

  /** The transaction that used the nonce, "canceled", or undefined when neither is found within the bounds. */
  async function findUse(q: AuthorizationQuery, latest: bigint): Promise<Hex | "canceled" | undefined> {
    const since = BigInt(q.since) - slack;
    const args = { authorizer: q.authorizer, nonce: q.nonce };
    let to = latest;
    for (let i = 0; i < maxWindows; i++) {
      const from = to >= windowSize ? to - windowSize + 1n : 0n;
      const range = { address: q.asset, args, fromBlock: from, toBlock: to } as const;
      const used = await client.getLogs({ ...range, event: eip3009Abi[1] });
      if (used.length > 0) return used[used.length - 1].transactionHash ?? undefined;
      if ((await client.getLogs({ ...range, event: eip3009Abi[2] })).length > 0) return "canceled";
      if (from === 0n) return undefined;
      const start = await client.getBlock({ blockNumber: from });
      if (start.timestamp < since) return undefined;
      to = from - 1n;
    }
    return undefined;
  }

  return {
    /** Chain id of the RPC, asked once (retried after a failure). */
    chainId(): Promise<number> {
      chainId ??= client.getChainId().catch((e) => {
        chainId = undefined;
        throw e;
      });
      return chainId;
    },

    /**
     * Does transaction `hash` settle this authorization? One RPC call (the
     * receipt): it must have succeeded and carry, from the token,
     * `AuthorizationUsed(authorizer, nonce)` and `Transfer(authorizer -> payTo, value)`
     * with value = `minValue` (the authorization's own value).
     */
    async confirm(q: Omit<AuthorizationQuery, "since">, hash: Hex): Promise<SettlementCheck> {
      let receipt: Awaited<ReturnType<PublicClient["getTransactionReceipt"]>>;
      try {
        receipt = await client.getTransactionReceipt({ hash });
      } catch (e) {
        if (e instanceof TransactionReceiptNotFoundError) return { state: "absent" };
        throw e;
      }
      if (receipt.status !== "success") return { state: "mismatch", detail: "the transaction reverted" };
      const fromToken = receipt.logs.filter((l) => isAddressEqual(l.address, q.asset));
      const used = parseEventLogs({ abi: eip3009Abi, eventName: "AuthorizationUsed", logs: fromToken }).some(
        (l) => isAddressEqual(l.args.authorizer, q.authorizer) && l.args.nonce.toLowerCase() === q.nonce.toLowerCase(),
      );
      if (!used) return { state: "mismatch", detail: "the transaction does not use this authorization" };
      const paid = parseEventLogs({ abi: erc20Abi, eventName: "Transfer", logs: fromToken }).some(
        (l) =>
          isAddressEqual(l.args.from, q.authorizer) &&
          isAddressEqual(l.args.to, q.payTo) &&
          l.args.value === q.minValue,
      );
      return paid ? { state: "confirmed" } : { state: "mismatch", detail: "the transaction does not pay pay-to" };
    },

    async find(q: AuthorizationQuery): Promise<AuthorizationFinding> {
      const latest = await client.getBlock({ blockTag: "latest" });
      const used = await client.readContract({
        address: q.asset,
        abi: eip3009Abi,
        functionName: "authorizationState",
        args: [q.authorizer, q.nonce],
        blockNumber: latest.number,
      });
      if (!used) return { state: "unused", chainTime: Number(latest.timestamp) };
      const txHash = await findUse(q, latest.number);
      // Never concluded from an absence: without the event, the outcome stays unknown.
      if (!txHash)
        return {
          state: "unknown",
          detail: "the nonce is used but neither its transaction nor its cancellation was found in the blocks searched",
        };
      if (txHash === "canceled") return { state: "spent", detail: "the authorization was canceled" };
      const receipt = await client.getTransactionReceipt({ hash: txHash });
      if (receipt.status !== "success") return { state: "unknown", detail: "the transaction using the nonce reverted" };
      const transfers = parseEventLogs({
        abi: erc20Abi,
        eventName: "Transfer",
        logs: receipt.logs.filter((l) => isAddressEqual(l.address, q.asset)),
      });
      const paid = transfers.some(
        (l) =>
          isAddressEqual(l.args.from, q.authorizer) && isAddressEqual(l.args.to, q.payTo) && l.args.value >= q.minValue,
      );
      return paid
        ? { state: "paid", txHash }
        : { state: "spent", detail: "the authorization was used for another transfer" };
    },
  };
}

export type AuthorizationLookup = ReturnType<typeof createAuthorizationLookup>;
