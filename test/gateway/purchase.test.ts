/**
 * The purchase decision core on its own clock: the "paid already" rule for a
 * settled proof re-presented before and after its validBefore, and for
 * another CID. A real ledger row, real catalog and real settler; the
 * facilitator fails the test if it is ever called (nothing here may charge).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { NETWORKS } from "../../src/chain/networks";
import { createAccessTokens } from "../../src/entitlements/access-token";
import { createSiwx } from "../../src/entitlements/siwx";
import type { Facilitator } from "../../src/facilitator/types";
import { createCatalog } from "../../src/gateway/catalog";
import { decodeProof } from "../../src/gateway/proof";
import { createPurchase } from "../../src/gateway/purchase";
import { createLedgerSettler } from "../../src/ledger/settler";
import { addContent, type Fixture, fixture, newAccount, price, signProof } from "./fixtures";

const neverCalled: Facilitator = {
  verify: () => Promise.reject(new Error("facilitator called")),
  settle: () => Promise.reject(new Error("facilitator called")),
  supported: () => Promise.reject(new Error("facilitator called")),
};

const VALID_BEFORE = 2_000_000_000;
const USDC = NETWORKS["base-sepolia"].usdc;
let f: Fixture;
let cids: Record<string, string>;
const seller = newAccount();
const buyer = newAccount();

beforeAll(async () => {
  f = fixture();
  cids = await addContent(f, { "a.txt": "paid words\n", "b.txt": "other words\n" });
  price(f, cids["a.txt"], [{ payTo: seller.address, amount: "10000" }]);
  price(f, cids["b.txt"], [{ payTo: seller.address, amount: "10000" }]);
});
afterAll(() => f?.cleanup());

/** A purchase core whose clock reads `now`. */
function purchaseAt(now: number) {
  const { payments } = f.stores;
  const settler = createLedgerSettler({ payments, facilitator: neverCalled, timeoutMs: 1000 });
  return createPurchase({
    catalog: createCatalog(f.db, f.stores, f.settings),
    payments,
    settler,
    entitlements: f.stores.entitlements,
    accessTokens: createAccessTokens({ managementSecret: "purchase-test-secret-purchase-test-0001" }),
    accessTokenTtlSeconds: 3600,
    siwx: createSiwx({ publicUrl: f.settings.publicUrl, secret: "purchase-test", nonces: f.stores.siwxNonces }),
    paymentIdentifiers: f.stores.paymentIdentifiers,
    now: () => now,
  });
}

describe("a settled proof re-presented", () => {
  test("is served for the same CID until its validBefore, refused as expired from then, and refused for another CID", async () => {
    const p = await signProof({
      version: 1,
      account: buyer,
      asset: USDC,
      payTo: seller.address,
      amount: "10000",
      validAfter: 0,
      validBefore: VALID_BEFORE,
    });
    const decoded = decodeProof(p.header);
    if (!decoded.ok) throw new Error("did not decode");
    const { payments } = f.stores;
    const claim = payments.claim({
      network: "base-sepolia",
      asset: USDC,
      payer: decoded.value.from,
      nonce: decoded.value.nonce,
      cid: cids["a.txt"],
      instructionId: "i",
      instructionVersion: 1,
      amount: "10000",
      payTo: seller.address,
      validBefore: BigInt(VALID_BEFORE),
      x402Version: 1,
      proofHash: decoded.value.proofHash,
    });
    payments.markSettled(claim.payment.id, `0x${"ab".repeat(32)}`);
    const request = (cid: string) => ({ cid, credentials: { xPayment: p.header }, charge: true });

    const before = await purchaseAt(VALID_BEFORE - 1).decide(request(cids["a.txt"]));
    expect(before).toMatchObject({
      kind: "serve",
      receipt: { success: true, transaction: `0x${"ab".repeat(32)}`, network: "base-sepolia" },
    });

    const after = await purchaseAt(VALID_BEFORE).decide(request(cids["a.txt"]));
    expect(after).toMatchObject({ kind: "refuse", reason: "invalid_exact_evm_payload_authorization_valid_before" });

    const elsewhere = await purchaseAt(VALID_BEFORE - 1).decide(request(cids["b.txt"]));
    expect(elsewhere).toMatchObject({ kind: "refuse", reason: "payment_already_used" });
  });
});
