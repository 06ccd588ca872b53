/**
 * The purchase decision core on its own clock: the "paid already" rule for a
 * settled proof re-presented before and after its validBefore, and for
 * another CID; a payment id freed when its attempt moved no money. A real
 * ledger row, real catalog and real settler; the facilitator is down (a
 * fault injected): nothing here may charge.
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

/** A facilitator that is down (a fault): every call fails, so nothing can be charged. */
const downFacilitator: Facilitator = {
  verify: () => Promise.reject(new Error("facilitator down")),
  settle: () => Promise.reject(new Error("facilitator down")),
  supported: () => Promise.reject(new Error("facilitator down")),
};

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
  const settler = createLedgerSettler({ payments, facilitator: downFacilitator, timeoutMs: 1000 });
  return createPurchase({
    catalog: createCatalog(f.stores, f.settings),
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

/** A settled ledger row for `header`'s authorization, as the settler leaves it. */
async function settledRow(validBefore: number, cid: string) {
  const p = await signProof({
    version: 1,
    account: buyer,
    asset: USDC,
    payTo: seller.address,
    amount: "10000",
    validAfter: 0,
    validBefore,
  });
  const decoded = decodeProof(p.header);
  if (!decoded.ok) throw new Error("did not decode");
  const { payments } = f.stores;
  const claim = payments.claim({
    network: "base-sepolia",
    asset: USDC,
    payer: decoded.value.from,
    nonce: decoded.value.nonce,
    cid,
    instructionId: "i",
    instructionVersion: 1,
    amount: "10000",
    payTo: seller.address,
    validBefore: BigInt(validBefore),
    x402Version: 1,
    proofHash: decoded.value.proofHash,
  });
  payments.markSettled(claim.payment.id, `0x${"ab".repeat(32)}`);
  return { header: p.header, createdAt: Math.floor(Date.parse(claim.payment.createdAt) / 1000) };
}

describe("a settled proof re-presented", () => {
  test("is served for the same CID until its validBefore, refused as expired from then, and refused for another CID", async () => {
    const t = Math.floor(Date.now() / 1000);
    const { header } = await settledRow(t + 60, cids["a.txt"]);
    const request = (cid: string) => ({ cid, credentials: { xPayment: header }, charge: true });

    const before = await purchaseAt(t + 59).decide(request(cids["a.txt"]));
    expect(before).toMatchObject({
      kind: "serve",
      receipt: { success: true, transaction: `0x${"ab".repeat(32)}`, network: "base-sepolia" },
    });

    const after = await purchaseAt(t + 60).decide(request(cids["a.txt"]));
    expect(after).toMatchObject({ kind: "refuse", reason: "invalid_exact_evm_payload_authorization_valid_before" });

    const elsewhere = await purchaseAt(t + 59).decide(request(cids["b.txt"]));
    expect(elsewhere).toMatchObject({ kind: "refuse", reason: "payment_already_used" });
  });

  test("a row settled before validBefore was capped (valid until 2^53-1) is a pass no longer: served only within the cap of its settlement", async () => {
    const { header, createdAt } = await settledRow(Number.MAX_SAFE_INTEGER, cids["b.txt"]);
    const request = { cid: cids["b.txt"], credentials: { xPayment: header }, charge: true };
    // MAX_TIMEOUT_SECONDS (60) + 30 s of skew after it was settled
    expect(await purchaseAt(createdAt + 89).decide(request)).toMatchObject({ kind: "serve" });
    expect(await purchaseAt(createdAt + 90).decide(request)).toMatchObject({
      kind: "refuse",
      reason: "invalid_exact_evm_payload_authorization_valid_before",
    });
  });
});

describe("payment-identifier", () => {
  /** A v2 proof carrying `extensions["payment-identifier"].info.id`. */
  async function proofWithId(id: string) {
    const p = await signProof({ version: 2, account: buyer, asset: USDC, payTo: seller.address, amount: "10000" });
    const payload = { ...p.payload, extensions: { "payment-identifier": { info: { id } } } };
    return Buffer.from(JSON.stringify(payload)).toString("base64");
  }

  test("an attempt whose authorization was released (facilitator unreachable) frees its id: a corrected payment is not 409", async () => {
    const id = "pay_released_0123456789abcdef";
    const first = await purchaseAt(Math.floor(Date.now() / 1000)).decide({
      cid: cids["a.txt"],
      credentials: { paymentSignature: await proofWithId(id) },
      charge: true,
    });
    expect(first).toMatchObject({ kind: "unavailable" });
    expect(f.stores.paymentIdentifiers.find(id)).toBeUndefined();
    const second = await purchaseAt(Math.floor(Date.now() / 1000)).decide({
      cid: cids["a.txt"],
      credentials: { paymentSignature: await proofWithId(id) },
      charge: true,
    });
    expect(second).toMatchObject({ kind: "unavailable" }); // the facilitator is still down, but no 409
  });
});
