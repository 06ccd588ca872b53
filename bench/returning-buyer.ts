/**
 * What a buyer's history costs their next purchase: `npx bun bench/returning-buyer.ts`.
 *
 * The SQLite stores' lookups on every paid request that depend on who pays:
 * `payments.heldFor` (an earlier unconfirmed payment of this buyer for this
 * file), `entitlements.active` (does the buyer own it already), and the claim
 * with the settle's mark that follow. One buyer with ROWS settled payments and
 * ROWS entitlements (default 20,000), in process, in-memory database, median
 * of 5 rounds of 2,000 calls. Before issue 14's fixes the first two read every
 * row of the buyer (6-9 ms and 12.7 ms at 20,000); a flat figure as ROWS
 * grows is what this shows.
 */
import { openDb } from "../src/db/client";
import { createEntitlementStore } from "../src/entitlements/store";
import { createPaymentStore, type PaymentClaim } from "../src/ledger/store";

const ROWS = Number(process.env.ROWS ?? 20_000);
const CALLS = 2_000;
const payer = "0x1111111111111111111111111111111111111111";
const db = openDb(":memory:");
const payments = createPaymentStore(db);
const entitlements = createEntitlementStore(db);

const claimOf = (nonce: string, cid: string): PaymentClaim => ({
  network: "base-sepolia",
  asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
  payer,
  nonce,
  cid,
  instructionId: "instruction",
  instructionVersion: 1,
  amount: "10000",
  payTo: "0x6135561038E7C676473431842e586C8248276AED",
  validBefore: 2_000_000_000n,
  x402Version: 2,
  proofHash: nonce,
});

db.sqlite.transaction(() => {
  for (let i = 0; i < ROWS; i++) {
    const c = payments.claim(claimOf(`0x${i.toString(16)}`, `cid${i}`));
    if (c.claimed) payments.markSettled(c.payment.id, "0xt");
    entitlements.grant({ payer, cid: `cid${i}`, instructionId: "instruction", expiresAt: null }, 1);
  }
})();

const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
function perCall(work: (i: number) => void): number {
  const rounds: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t = performance.now();
    for (let i = 0; i < CALLS; i++) work(r * CALLS + i);
    rounds.push(((performance.now() - t) / CALLS) * 1000);
  }
  return median(rounds);
}

const held = perCall(() => payments.heldFor(payer, "cid7"));
const active = perCall(() => entitlements.active(payer, "not-owned", "other", 2));
const claim = perCall((i) => {
  const c = payments.claim(claimOf(`0xnew${i}`, "new"));
  if (c.claimed) payments.markSettled(c.payment.id, "0xt");
});
console.log(`a buyer with ${ROWS.toLocaleString()} payments and entitlements, median of 5 rounds of ${CALLS}:`);
console.log(`  payments.heldFor        ${held.toFixed(1)} us`);
console.log(`  entitlements.active     ${active.toFixed(1)} us`);
console.log(`  claim + markSettled     ${claim.toFixed(1)} us`);
db.sqlite.close();
