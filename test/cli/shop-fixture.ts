/**
 * A SQLite shop that has lived a little, for the tests of `db copy` and of the
 * commands on PostgreSQL: a row in every table db copy copies, written through
 * the stores (the sales rollups by the ledger's triggers, the funnel by its
 * counters), the file checkpointed so its bytes are the whole shop.
 */
import { openDb } from "../../src/db/client";
import { createFunnelCounters } from "../../src/stats/counters";
import { createStores } from "../../src/stores";

export const PAYER = "0x1111111111111111111111111111111111111111";
export const OTHER = "0x2222222222222222222222222222222222222222";
export const SELLER = "0x3333333333333333333333333333333333333333";
export const USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
export const MAINNET_USDC = "0x833589fCD6eDb6E08f4c7C32D4c71b54bdA02913";
export const CID_A = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";
export const CID_B = "bafkreidvbhs33ighmljlvr7zbv2ywwzcmp5adtf4kqvlly67cy56bdtmve";
export const CID_C = "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku";

/**
 * A shop that has lived a little: every table of copyPlan() gets rows, through the stores where
 * they write them (the rollups by the ledger's triggers, the funnel by its counters).
 */
export function makeShop(path: string, contentDir: string) {
  const db = openDb(path);
  const stores = createStores(db, { contentDir });
  const now = Math.floor(Date.now() / 1000);
  const a = stores.instructions.create({
    name: "Report",
    description: "a PDF",
    requirements: [
      { network: "base-sepolia", asset: USDC, pay_to: SELLER, amount: "10000" },
      { network: "base", asset: MAINNET_USDC, pay_to: SELLER, amount: "20000" },
    ],
  });
  const b = stores.instructions.create({
    name: "Bundle",
    requirements: [{ network: "base-sepolia", asset: USDC, pay_to: SELLER, amount: "5" }],
    access: "30d",
    access_scope: "instruction",
  });
  stores.instructions.attachCid(a.id, CID_A);
  stores.instructions.attachCid(b.id, CID_B);
  stores.instructions.attachCid(b.id, CID_C);
  const hook = stores.notifications.createWebhook({ url: "https://hooks.example.com/a", secret: "s".repeat(32) });
  stores.notifications.createWebhook({
    url: "https://hooks.example.com/b",
    events: ["payment.settled", "entitlement.revoked"],
    description: "accounting",
    enabled: false,
  });

  let nonce = 0;
  const claim = (over: { network?: string; asset?: string; amount?: string; cid?: string; payer?: string } = {}) => {
    const result = stores.payments.claim({
      network: over.network ?? "base-sepolia",
      asset: over.asset ?? USDC,
      payer: over.payer ?? PAYER,
      nonce: `0x${(++nonce).toString(16).padStart(64, "0")}`,
      cid: over.cid ?? CID_A,
      instructionId: over.cid === CID_B ? b.id : a.id,
      instructionVersion: 1,
      amount: over.amount ?? "10000",
      payTo: SELLER,
      validBefore: BigInt(now + 600),
      x402Version: 2,
      proofHash: `hash-${nonce}`,
    });
    if (!result.claimed) throw new Error("not claimed");
    return result.payment;
  };
  const tx = (n: number) => `0x${n.toString(16).padStart(64, "a")}`;
  const settled = [claim(), claim({ amount: "12345" }), claim({ cid: CID_B, amount: "5", payer: OTHER })];
  // Of 16 digits or more: counted in the rollups' `oversized`, summed exactly by the verification.
  settled.push(claim({ network: "base", asset: MAINNET_USDC, amount: "123456789012345678901" }));
  for (const [i, p] of settled.entries()) {
    stores.payments.markSettled(p.id, tx(i + 1));
    stores.entitlements.grantForPayment({
      payer: p.payer,
      cid: p.cid,
      instructionId: p.instructionId,
      paymentId: p.id,
      policy: p.cid === CID_B ? { kind: "for", seconds: 30 * 86400 } : { kind: "forever" },
      scope: p.cid === CID_B ? "instruction" : "cid",
      nowSeconds: now,
    });
  }
  const failed = claim();
  stores.payments.markFailed(failed.id, "verify: invalid signature");
  const pending = claim({ amount: "777" });
  stores.payments.markUnconfirmed(pending.id, "no receipt yet");
  stores.resolutions.record({
    paymentId: pending.id,
    action: "check",
    outcome: "pending",
    basis: "chain",
    txHash: null,
    actor: "cli:operator",
    note: "still in flight",
  });
  const gift = stores.entitlements.grant({ payer: OTHER, cid: CID_A, instructionId: a.id, note: "a refund" }, now);
  stores.entitlements.revoke(gift.id, now + 1);
  stores.siwxNonces.use("nonce-one", now);
  stores.siwxNonces.use("nonce-two", now + 5);
  stores.paymentIdentifiers.remember("pay_0000000000000001", "payload-hash-1", new Date().toISOString());
  stores.paymentIdentifiers.attach("pay_0000000000000001", settled[0].id);
  stores.paymentIdentifiers.remember("pay_0000000000000002", "payload-hash-2", new Date().toISOString());
  const expires = new Date(Date.now() + 86_400_000).toISOString();
  stores.tokens.record({
    id: "tok-1",
    scopes: ["read"],
    label: "dashboard",
    createdAt: new Date().toISOString(),
    expiresAt: expires,
  });
  stores.tokens.record({
    id: "tok-2",
    scopes: ["read", "write"],
    label: null,
    createdAt: new Date().toISOString(),
    expiresAt: expires,
  });
  stores.tokens.revoke("tok-2", new Date().toISOString());
  stores.notifications.queueTest(stores.notifications.listWebhooks().find((w) => w.id === hook.id)!);
  const funnel = createFunnelCounters(db.sqlite);
  const item = { cid: CID_A, instruction: { id: a.id } };
  funnel.offer(item);
  funnel.offer(item);
  funnel.proof(item);
  funnel.offer({ cid: CID_B, instruction: { id: b.id } });
  funnel.stop(); // flushes
  // Everything into the file itself, so the file's bytes are the whole shop (the test compares them).
  db.sqlite.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.sqlite.close();
}
