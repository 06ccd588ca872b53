/**
 * Ledger claims for tests: a valid payment claim whose fields a test
 * overrides one at a time. Each call gets a fresh nonce, so claims never
 * collide unless a test makes them.
 */
import type { PaymentClaim } from "../../src/ledger/store";

export const CID_A = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";
export const PAYER = "0x1111111111111111111111111111111111111111";

let n = 0;
export function claim(over: Partial<PaymentClaim> = {}): PaymentClaim {
  n++;
  return {
    network: "base-sepolia",
    asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
    payer: PAYER,
    nonce: `0x${n.toString(16).padStart(64, "0")}`,
    cid: CID_A,
    instructionId: "0190a000-0000-7000-8000-000000000001",
    instructionVersion: 1,
    amount: "10000",
    payTo: "0x2222222222222222222222222222222222222222",
    validBefore: 2_000_000_000n,
    x402Version: 1,
    proofHash: "a".repeat(64),
    ...over,
  };
}
