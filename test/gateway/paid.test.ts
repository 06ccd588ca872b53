/**
 * Paying for real on a local chain (anvil + EIP-3009 token + in-process
 * facilitator): settle before serve, the ledger as replay guard, one
 * settlement for many concurrent requests, re-serving a paid proof, ranges.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { privateKeyToAccount } from "viem/accounts";
import { localPublicClient } from "../../src/chain/devnet";
import { createTestStack, type TestStack } from "../e2e/stack";
import { signProof } from "./fixtures";

const ARTICLE = `# A paid article\n\n${"Lorem ipsum dolor sit amet. ".repeat(200)}\nThe end.\n`;
const OTHER = "another paid file\n";

let stack: TestStack;
let settleCalls = 0;
let verifyCalls = 0;

beforeAll(async () => {
  stack = await createTestStack({
    files: { "article.md": ARTICLE, "other.txt": OTHER, "third.txt": "third\n" },
    buyers: 3,
    wrapFacilitator: (real) => ({
      ...real,
      verify: (r) => (verifyCalls++, real.verify(r)),
      settle: (r) => (settleCalls++, real.settle(r)),
      supported: () => real.supported(),
    }),
  });
});
afterAll(async () => {
  await stack?.stop();
});

const url = (name: string) => `${stack.url}/x402/cid/${stack.cids[name]}`;
const buyer = (i: number) => privateKeyToAccount(stack.devnet.buyers[i].privateKey);
const proof = (i: number, version: 1 | 2, over: Partial<Parameters<typeof signProof>[0]> = {}) =>
  signProof({
    version,
    account: buyer(i),
    asset: stack.devnet.token,
    payTo: stack.devnet.seller.address,
    amount: "10000",
    ...over,
  });
const headerName = (v: 1 | 2) => (v === 1 ? "X-PAYMENT" : "PAYMENT-SIGNATURE");

describe("paying on the local chain", () => {
  test("v1: settle, then serve the file byte for byte with receipt, ETag and length; balances move; one ledger row", async () => {
    const seller = stack.devnet.seller.address;
    const payer = buyer(0).address;
    const [sellerBefore, buyerBefore] = await Promise.all([stack.balanceOf(seller), stack.balanceOf(payer)]);
    const p = await proof(0, 1);
    const res = await fetch(url("article.md"), { headers: { "X-PAYMENT": p.header } });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(ARTICLE);
    expect(res.headers.get("content-type")).toContain("text/markdown");
    expect(res.headers.get("content-length")).toBe(String(Buffer.byteLength(ARTICLE)));
    expect(res.headers.get("etag")).toBe(`"${stack.cids["article.md"]}"`);
    const receipt = decodePaymentResponseHeader(res.headers.get("x-payment-response")!) as any;
    expect(receipt).toMatchObject({ success: true, network: "base-sepolia", payer });
    expect(receipt.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    const onChain = await localPublicClient(stack.devnet.rpcUrl).getTransactionReceipt({ hash: receipt.transaction });
    expect(onChain.status).toBe("success");
    expect(await stack.balanceOf(seller)).toBe(sellerBefore + 10000n);
    expect(await stack.balanceOf(payer)).toBe(buyerBefore - 10000n);
    const row = stack.stores.payments.find({
      network: "base-sepolia",
      asset: stack.devnet.token,
      payer,
      nonce: p.nonce.toLowerCase(),
    })!;
    expect(row).toMatchObject({
      state: "settled",
      txHash: receipt.transaction,
      cid: stack.cids["article.md"],
      instructionId: stack.instruction.id,
      instructionVersion: 1,
      amount: "10000",
      payTo: seller,
    });

    // Trap 4: the same proof again for the same CID is served again, with no new charge.
    const again = await fetch(url("article.md"), { headers: { "X-PAYMENT": p.header } });
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(ARTICLE);
    expect((decodePaymentResponseHeader(again.headers.get("x-payment-response")!) as any).transaction).toBe(
      receipt.transaction,
    );
    expect(await stack.balanceOf(payer)).toBe(buyerBefore - 10000n);

    // Resuming a download: Range with the paid proof -> 206, still no charge.
    const part = await fetch(url("article.md"), { headers: { "X-PAYMENT": p.header, Range: "bytes=2-11" } });
    expect(part.status).toBe(206);
    expect(part.headers.get("content-range")).toBe(`bytes 2-11/${Buffer.byteLength(ARTICLE)}`);
    expect(await part.text()).toBe(ARTICLE.slice(2, 12));
    const tail = await fetch(url("article.md"), { headers: { "X-PAYMENT": p.header, Range: "bytes=-9" } });
    expect(await tail.text()).toBe(ARTICLE.slice(-9));

    // HEAD with the paid proof: the GET headers, no body, no charge.
    const head = await fetch(url("article.md"), { method: "HEAD", headers: { "X-PAYMENT": p.header } });
    expect(head.status).toBe(200);
    expect(head.headers.get("x-payment-response")).toBeTruthy();
    expect(head.headers.get("content-length")).toBe(String(Buffer.byteLength(ARTICLE)));
    expect(await head.text()).toBe("");

    // The same proof for another CID is refused.
    const replay = await fetch(url("other.txt"), { headers: { "X-PAYMENT": p.header } });
    expect(replay.status).toBe(403);
    const body = (await replay.json()) as any;
    expect(body.reason).toBe("payment_already_used");
    expect(JSON.stringify(body)).not.toContain("another paid file");
    expect(await stack.balanceOf(payer)).toBe(buyerBefore - 10000n);
    expect(stack.db.sqlite.query("SELECT count(*) AS n FROM payments WHERE payer = ?").get(payer)).toEqual({ n: 1 });
  });

  test("v2: PAYMENT-SIGNATURE pays, PAYMENT-RESPONSE names the CAIP-2 network", async () => {
    const p = await proof(1, 2);
    const res = await fetch(url("other.txt"), { headers: { "PAYMENT-SIGNATURE": p.header } });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(OTHER);
    expect(res.headers.get("x-payment-response")).toBeNull();
    expect(decodePaymentResponseHeader(res.headers.get("payment-response")!)).toMatchObject({
      success: true,
      network: "eip155:84532",
      payer: buyer(1).address,
    });
  });

  test("Range on the first paid request answers 206 after settling", async () => {
    const p = await proof(1, 1);
    const res = await fetch(url("article.md"), { headers: { "X-PAYMENT": p.header, Range: "bytes=0-4" } });
    expect(res.status).toBe(206);
    expect(await res.text()).toBe(ARTICLE.slice(0, 5));
    expect(res.headers.get("x-payment-response")).toBeTruthy();
  });

  test("an unsatisfiable Range with a fresh proof: 416 with the file's size and nobody charged; the same proof then pays once and resumes", async () => {
    const payer = buyer(0).address;
    const before = await stack.balanceOf(payer);
    const settlesBefore = settleCalls;
    const size = Buffer.byteLength(OTHER);
    const p = await proof(0, 1);
    const res = await fetch(url("other.txt"), { headers: { "X-PAYMENT": p.header, Range: `bytes=${size}-` } });
    expect(res.status).toBe(416);
    expect(res.headers.get("content-range")).toBe(`bytes */${size}`);
    expect(await res.text()).toBe("");
    // decided before any charge: no receipt, no settle, no money moved, no ledger row
    expect(res.headers.get("x-payment-response")).toBeNull();
    expect(settleCalls).toBe(settlesBefore);
    expect(await stack.balanceOf(payer)).toBe(before);
    expect(
      stack.stores.payments.find({
        network: "base-sepolia",
        asset: stack.devnet.token,
        payer,
        nonce: p.nonce.toLowerCase(),
      }),
    ).toBeUndefined();

    const whole = await fetch(url("other.txt"), { headers: { "X-PAYMENT": p.header } });
    expect(whole.status).toBe(200);
    expect(await whole.text()).toBe(OTHER);
    const receipt = decodePaymentResponseHeader(whole.headers.get("x-payment-response")!) as any;
    expect(receipt).toMatchObject({ success: true, payer });
    // a paid proof with a range it cannot have: 416 again, still charged once
    const beyond = await fetch(url("other.txt"), { headers: { "X-PAYMENT": p.header, Range: `bytes=${size}-` } });
    expect(beyond.status).toBe(416);
    const tail = await fetch(url("other.txt"), { headers: { "X-PAYMENT": p.header, Range: "bytes=-3" } });
    expect(tail.status).toBe(206);
    expect(await tail.text()).toBe(OTHER.slice(-3));
    expect((decodePaymentResponseHeader(tail.headers.get("x-payment-response")!) as any).transaction).toBe(
      receipt.transaction,
    );
    expect(await stack.balanceOf(payer)).toBe(before - 10000n);
  });

  test("HEAD with a fresh proof never charges", async () => {
    const before = await stack.balanceOf(buyer(2).address);
    const p = await proof(2, 1);
    const res = await fetch(url("third.txt"), { method: "HEAD", headers: { "X-PAYMENT": p.header } });
    expect(res.status).toBe(402);
    expect(await stack.balanceOf(buyer(2).address)).toBe(before);
    expect(
      stack.stores.payments.find({
        network: "base-sepolia",
        asset: stack.devnet.token,
        payer: buyer(2).address,
        nonce: p.nonce.toLowerCase(),
      }),
    ).toBeUndefined();
  });

  test("50 concurrent requests with one proof: one settlement, every request served", async () => {
    const payer = buyer(2).address;
    const before = await stack.balanceOf(payer);
    const calls = settleCalls;
    const p = await proof(2, 2);
    const responses = await Promise.all(
      Array.from({ length: 50 }, () =>
        fetch(url("third.txt"), { headers: { [headerName(2)]: p.header } }).then(async (r) => ({
          status: r.status,
          text: await r.text(),
          receipt: r.headers.get("payment-response"),
        })),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(50).fill(200));
    expect(new Set(responses.map((r) => r.text))).toEqual(new Set(["third\n"]));
    expect(new Set(responses.map((r) => (decodePaymentResponseHeader(r.receipt!) as any).transaction)).size).toBe(1);
    expect(settleCalls - calls).toBe(1);
    expect(await stack.balanceOf(payer)).toBe(before - 10000n);
    expect(
      stack.db.sqlite.query("SELECT count(*) AS n FROM payments WHERE nonce = ?").get(p.nonce.toLowerCase()),
    ).toEqual({ n: 1 });
  });
});

describe("a price change after payment", () => {
  test("a paid proof still serves its CID; new proofs must pay the new price", async () => {
    const p = await proof(0, 1);
    expect((await fetch(url("third.txt"), { headers: { "X-PAYMENT": p.header } })).status).toBe(200);
    const current = stack.stores.instructions.get(stack.instruction.id);
    stack.stores.instructions.update(current.id, { requirements: [{ ...current.requirements[0], amount: "20000" }] });
    try {
      const again = await fetch(url("third.txt"), { headers: { "X-PAYMENT": p.header } });
      expect(again.status).toBe(200);
      expect(await again.text()).toBe("third\n");
      const cheap = await fetch(url("third.txt"), { headers: { "X-PAYMENT": (await proof(0, 1)).header } });
      expect(cheap.status).toBe(403);
      expect(((await cheap.json()) as any).reason).toBe("invalid_exact_evm_authorization_value");
    } finally {
      stack.stores.instructions.update(current.id, { requirements: current.requirements });
    }
  });
});

describe("refused before the facilitator, on the real stack", () => {
  test("forged, underpaid, wrong recipient, wrong network, expired: 403 and no facilitator call", async () => {
    const before = { verify: verifyCalls, settle: settleCalls };
    const now = Math.floor(Date.now() / 1000);
    const cases: [Promise<{ header: string }>, string][] = [
      [proof(0, 1, { signature: `0x${"12".repeat(65)}` }), "invalid_exact_evm_signature"],
      [proof(0, 1, { value: "9999" }), "invalid_exact_evm_authorization_value"],
      [proof(0, 1, { payTo: buyer(1).address }), "invalid_exact_evm_recipient_mismatch"],
      [proof(0, 1, { chainId: 8453 }), "invalid_exact_evm_signature"],
      [proof(0, 1, { validBefore: now - 1 }), "invalid_exact_evm_payload_authorization_valid_before"],
    ];
    for (const [p, reason] of cases) {
      const res = await fetch(url("other.txt"), { headers: { "X-PAYMENT": (await p).header } });
      expect(res.status).toBe(403);
      expect(((await res.json()) as any).reason).toBe(reason);
    }
    expect({ verify: verifyCalls, settle: settleCalls }).toEqual(before);
  });
});
