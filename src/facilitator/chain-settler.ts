/**
 * The chain side of settlement (the facilitator's; the gateway's ledger side
 * is src/ledger/settler.ts): submit transferWithAuthorization from the
 * relayer and wait for its receipt, bounded. Written here rather than taken from @x402/evm because
 * its settle lacks what a self-hosted relayer needs: v1 failures come back as
 * raw library messages, and a v1 retry after a receipt timeout cannot find the
 * transaction already sent. Here:
 *
 * - one settlement per authorization at a time: a second concurrent settle of
 *   the same authorization gets `duplicate_settlement`, never a second tx;
 * - nothing is submitted unless verify passes just before, inside that lock;
 * - a receipt that does not come within RECEIPT_TIMEOUT_SECONDS ends in
 *   `success:false, errorReason:"settlement_pending"` with the transaction
 *   hash, and a retry of the same authorization waits for that transaction
 *   instead of sending another;
 * - a mined transaction counts only if its status is success and it carries
 *   the expected Transfer(from, to, value) event of the asset.
 */
import { eip3009ABI } from "@x402/evm";
import {
  BaseError,
  erc20Abi,
  type Hex,
  isAddressEqual,
  parseErc6492Signature,
  parseEventLogs,
  parseSignature,
  type TransactionReceipt,
} from "viem";
import { Reason } from "../x402/reasons";
import type { Relayer } from "./relayer";
import { FacilitatorUnavailableError, type SettleResponse } from "./types";
import type { VerifiedPayment } from "./verify";

/** The authorization a settlement is about, as the request states it (before any check). */
export type Authorization = Pick<VerifiedPayment, "chainId" | "asset" | "payer" | "to" | "value" | "nonce">;

/** Transactions sent but not confirmed in time, by authorization. Bounded: the oldest go first. */
class PendingTransactions {
  private readonly map = new Map<string, { hash: Hex; at: number }>();
  constructor(
    private readonly max = 10_000,
    private readonly ttlMs = 60 * 60 * 1000,
  ) {}
  get(key: string): Hex | undefined {
    const e = this.map.get(key);
    if (e && Date.now() - e.at > this.ttlMs) this.map.delete(key);
    return this.map.get(key)?.hash;
  }
  set(key: string, hash: Hex) {
    this.map.delete(key);
    this.map.set(key, { hash, at: Date.now() });
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value as string);
  }
  delete(key: string) {
    this.map.delete(key);
  }
}

/** Revert reasons of EIP-3009 tokens (USDC's wording) as x402 reason codes. */
function reasonFromRevert(message: string): string | undefined {
  if (/authorization is used|authorization.*canceled|AuthorizationAlreadyUsed/i.test(message))
    return Reason.nonceAlreadyUsed;
  if (/authorization is expired|AuthorizationExpired/i.test(message)) return Reason.validBefore;
  if (/authorization is not yet valid|AuthorizationNotYetValid/i.test(message)) return Reason.validAfter;
  if (/exceeds balance|insufficient balance|ERC20InsufficientBalance/i.test(message)) return Reason.insufficientBalance;
  if (/invalid signature|ECRecover/i.test(message)) return Reason.signature;
  if (/execution reverted|reverted/i.test(message)) return Reason.transactionFailed;
  return undefined;
}

function authorizationKey(a: Authorization) {
  return `${a.chainId}:${a.asset}:${a.payer}:${a.nonce}`.toLowerCase();
}

/** Where operators learn why a settlement failed on our side (relayer out of gas, RPC down). */
export interface SettlementLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

export function createChainSettler(relayer: Relayer, receiptTimeoutMs: number, log?: SettlementLog) {
  const pending = new PendingTransactions();
  const inFlight = new Set<string>();

  async function submit(p: VerifiedPayment): Promise<Hex> {
    // A deployed smart wallet may still wrap its signature for ERC-6492; the token wants the inner one.
    const { signature } = parseErc6492Signature(p.signature);
    const base = [p.payer, p.to, p.value, p.validAfter, p.validBefore, p.nonce] as const;
    let args: readonly unknown[] = [...base, signature];
    if (signature.length === 132) {
      const { r, s, v, yParity } = parseSignature(signature);
      args = [...base, Number(v ?? BigInt(yParity + 27)), r, s];
    }
    return relayer.wallet.writeContract({
      address: p.asset,
      abi: eip3009ABI,
      functionName: "transferWithAuthorization",
      args: args as never,
      account: relayer.wallet.account,
      chain: relayer.chain,
    });
  }

  function transferred(receipt: TransactionReceipt, a: Authorization) {
    const logs = parseEventLogs({
      abi: erc20Abi,
      eventName: "Transfer",
      logs: receipt.logs.filter((l) => isAddressEqual(l.address, a.asset)),
    });
    return logs.some(
      (l) => isAddressEqual(l.args.from, a.payer) && isAddressEqual(l.args.to, a.to) && l.args.value === a.value,
    );
  }

  async function outcome(key: string, hash: Hex, a: Authorization, network: string): Promise<SettleResponse> {
    const answer = { transaction: hash, network, payer: a.payer };
    let receipt: TransactionReceipt;
    try {
      receipt = await relayer.publicClient.waitForTransactionReceipt({
        hash,
        timeout: receiptTimeoutMs,
        pollingInterval: relayer.pollingInterval,
      });
    } catch {
      // Timed out, or the RPC stopped answering: the transaction may still land. Remember it so
      // a retry of this authorization waits for it rather than sending a second one.
      pending.set(key, hash);
      log?.warn({ transaction: hash, payer: a.payer, timeoutMs: receiptTimeoutMs }, "settlement: no receipt in time");
      return { success: false, errorReason: Reason.settlementPending, ...answer };
    }
    pending.delete(key);
    if (receipt.status !== "success") {
      log?.warn({ transaction: hash, payer: a.payer }, "settlement: transaction reverted");
      return { success: false, errorReason: Reason.transactionFailed, ...answer };
    }
    if (!transferred(receipt, a)) return { success: false, errorReason: Reason.transferEventMismatch, ...answer };
    return { success: true, ...answer };
  }

  /**
   * Settles one authorization: verify (passed in, run inside the lock), submit, wait.
   * `network` is echoed in the answer as the requirement spelled it.
   */
  return async function settleAuthorization(
    a: Authorization,
    network: string,
    verify: () => Promise<{ payment?: VerifiedPayment; invalidReason?: string }>,
  ): Promise<SettleResponse> {
    const key = authorizationKey(a);
    const failed = (errorReason: string): SettleResponse => ({
      success: false,
      errorReason,
      transaction: "",
      network,
      payer: a.payer,
    });
    if (inFlight.has(key)) return failed(Reason.duplicateSettlement);
    inFlight.add(key);
    try {
      // Sent earlier and not confirmed in time: its fate is this authorization's fate.
      const earlier = pending.get(key);
      if (earlier) return await outcome(key, earlier, a, network);

      const checked = await verify();
      if (!checked.payment) return failed(checked.invalidReason ?? Reason.unexpectedSettleError);
      let hash: Hex;
      try {
        hash = await submit(checked.payment);
      } catch (e) {
        const message = e instanceof BaseError ? `${e.shortMessage} ${e.details ?? ""}` : String(e);
        const reason = reasonFromRevert(message);
        if (reason) return failed(reason);
        // The relayer's problem, not the payment's (no gas, RPC down): the operator must see it.
        // shortMessage only: details can carry the RPC URL, and with it an API key.
        log?.warn(
          { payer: a.payer, error: e instanceof BaseError ? e.shortMessage : "unknown" },
          "settlement: could not submit",
        );
        throw new FacilitatorUnavailableError("could not submit the settlement transaction");
      }
      return await outcome(key, hash, checked.payment, network);
    } finally {
      inFlight.delete(key);
    }
  };
}

export type ChainSettler = ReturnType<typeof createChainSettler>;
