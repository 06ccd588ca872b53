/**
 * End to end with the real x402 clients from npm, nothing mocked: each pays a
 * gateway on a local chain and receives the file byte for byte; balances move
 * on chain; the ledger holds one row per payment.
 * Trap 8: x402-fetch refuses more than 0.10 USDC without `maxValue`, and
 * @x402/fetch refuses tokens outside its list unless spend controls allow
 * them; the price here (0.15) and the local token exercise both.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { decodePaymentResponseHeader, wrapFetchWithPayment as wrapFetchV2, x402Client } from "@x402/fetch";
import axios from "axios";
import { privateKeyToAccount } from "viem/accounts";
import { withPaymentInterceptor } from "x402-axios";
import { createSigner, decodeXPaymentResponse, wrapFetchWithPayment } from "x402-fetch";
import { usd } from "../../src/money";
import { ENGINES, type Engine } from "../support/engines";
import { pgAvailable, testServer } from "../support/postgres";
import { createTestStack, type TestStack } from "./stack";

const PRICE = 150_000n; // 0.15 USDC: above x402-fetch's default cap
const VIDEO = new Uint8Array(300 * 1024).map((_, i) => (i * 31 + 7) & 0xff); // two chunks: a dag-pb root CID
const ARTICLE = "# Hello, paid world\n\nThis article costs fifteen cents.\n";
const IMAGE = new Uint8Array([
  0x89,
  0x50,
  0x4e,
  0x47,
  0x0d,
  0x0a,
  0x1a,
  0x0a,
  ...Array.from({ length: 2000 }, (_, i) => i & 0xff),
]);

const FILES: Record<string, Uint8Array> = {
  "article.md": new TextEncoder().encode(ARTICLE),
  "image.png": IMAGE,
  "clip.mp4": VIDEO,
};

const withPostgres = await pgAvailable("test/e2e/clients (PostgreSQL half)");
if (withPostgres) await testServer(); // its initdb takes longer than a hook's time limit
const engines = ENGINES.filter((e) => e !== "postgres" || withPostgres);

describe.each(engines)("on %s", (engine) => {
  let stack: TestStack<Engine>;
  beforeAll(async () => {
    stack = await createTestStack({ files: FILES, amount: PRICE.toString(), buyers: 4, engine });
  }, 60_000);
  afterAll(async () => {
    await stack?.stop();
  }, 60_000);

  const url = (name: string) => `${stack.url}/x402/cid/${stack.cids[name]}`;

  function ledgerRows(payer: string) {
    return stack.sql.all<{ state: string; cid: string; tx_hash: string; amount: string }>(
      "SELECT state, cid, tx_hash, amount FROM payments WHERE payer = ?",
      payer,
    );
  }

  async function expectPaid(
    payer: `0x${string}`,
    file: string,
    pay: () => Promise<{ bytes: Uint8Array; receipt: { success: boolean; transaction: string; payer?: string } }>,
  ) {
    const seller = stack.devnet.seller.address;
    const [sellerBefore, buyerBefore] = await Promise.all([stack.balanceOf(seller), stack.balanceOf(payer)]);
    const { bytes, receipt } = await pay();
    expect(Buffer.from(bytes).equals(Buffer.from(FILES[file]))).toBe(true);
    expect(receipt.success).toBe(true);
    expect(receipt.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await stack.balanceOf(seller)).toBe(sellerBefore + PRICE);
    expect(await stack.balanceOf(payer)).toBe(buyerBefore - PRICE);
    expect(await ledgerRows(payer)).toEqual([
      { state: "settled", cid: stack.cids[file], tx_hash: receipt.transaction, amount: PRICE.toString() },
    ]);
  }

  describe("real x402 clients pay on the local chain", () => {
    test("x402-fetch (v1, X-PAYMENT), with maxValue raised", async () => {
      const signer = await createSigner("base-sepolia", stack.devnet.buyers[0].privateKey);
      // Without a higher maxValue the client refuses before paying anything.
      await expect(wrapFetchWithPayment(fetch, signer as never)(url("image.png"))).rejects.toThrow(/exceeds maximum/);
      const pay = wrapFetchWithPayment(fetch, signer as never, PRICE);
      await expectPaid(stack.devnet.buyers[0].address, "image.png", async () => {
        const res = await pay(url("image.png"));
        expect(res.status).toBe(200);
        expect(res.headers.get("content-type")).toBe("image/png");
        return {
          bytes: new Uint8Array(await res.arrayBuffer()),
          receipt: decodeXPaymentResponse(res.headers.get("x-payment-response")!),
        };
      });
    });

    test("x402-axios (v1, X-PAYMENT)", async () => {
      const signer = await createSigner("base-sepolia", stack.devnet.buyers[1].privateKey);
      // The interceptor reads the 402 as parsed JSON, so the client keeps axios' default responseType.
      const client = withPaymentInterceptor(axios.create({ timeout: 20_000 }), signer as never);
      await expectPaid(stack.devnet.buyers[1].address, "article.md", async () => {
        const res = await client.get(url("article.md"));
        expect(res.status).toBe(200);
        expect(res.headers["content-type"]).toContain("text/markdown");
        return {
          bytes: new TextEncoder().encode(res.data),
          receipt: decodeXPaymentResponse(res.headers["x-payment-response"]),
        };
      });
    });

    test("@x402/fetch + @x402/evm (v2, PAYMENT-SIGNATURE), the local token allowed by spend controls", async () => {
      const account = privateKeyToAccount(stack.devnet.buyers[2].privateKey);
      const client = new x402Client();
      registerExactEvmScheme(client, { signer: account });
      client.setSpendControls({ allowedAssets: [{ network: "eip155:84532", asset: stack.devnet.token }] });
      const pay = wrapFetchV2(fetch, client);
      await expectPaid(account.address, "clip.mp4", async () => {
        const res = await pay(url("clip.mp4"));
        expect(res.status).toBe(200);
        expect(res.headers.get("content-type")).toBe("video/mp4");
        expect(res.headers.get("x-payment-response")).toBeNull();
        return {
          bytes: new Uint8Array(await res.arrayBuffer()),
          receipt: decodePaymentResponseHeader(res.headers.get("payment-response")!),
        };
      });
      expect(stack.cids["clip.mp4"]).toStartWith("bafybei");
    });

    test("the creator sees every payment and the revenue in GET /v3/x402/payments", async () => {
      // this test's own payments, by a buyer no other test uses
      const payer = stack.devnet.buyers[3].address;
      const pay = wrapFetchWithPayment(
        fetch,
        (await createSigner("base-sepolia", stack.devnet.buyers[3].privateKey)) as never,
        PRICE,
      );
      const paid: { cid: string; transaction: string }[] = [];
      for (const file of ["article.md", "image.png"]) {
        const res = await pay(url(file));
        expect(res.status).toBe(200);
        paid.push({
          cid: stack.cids[file],
          transaction: decodeXPaymentResponse(res.headers.get("x-payment-response")!).transaction,
        });
      }

      const { createToken } = await import("../../src/http/auth");
      const { STACK_JWT_SECRET } = await import("./stack");
      const token = await createToken(STACK_JWT_SECRET, { scopes: ["read"], ttlSeconds: 60 });
      const list = async (query: string) => {
        const res = await fetch(`${stack.url}/v3/x402/payments?${query}`, {
          headers: { Authorization: `Bearer ${token}` },
        });
        expect(res.status).toBe(200);
        return ((await res.json()) as any).data;
      };
      const mine = await list(`state=settled&payer=${payer}`);
      expect(
        mine.payments
          .map((p: any) => ({ cid: p.cid, transaction: p.transaction }))
          .sort((a: any, b: any) => a.cid.localeCompare(b.cid)),
      ).toEqual([...paid].sort((a, b) => a.cid.localeCompare(b.cid)));
      for (const p of mine.payments)
        expect(p).toMatchObject({
          state: "settled",
          payer,
          amount: PRICE.toString(),
          network: "base-sepolia",
          asset: stack.devnet.token,
        });
      expect(mine.totals).toEqual([
        {
          network: "base-sepolia",
          asset: stack.devnet.token,
          amount: (2n * PRICE).toString(),
          amount_usd: usd(2n * PRICE),
          count: 2,
        },
      ]);

      // unfiltered: every settled payment is listed, and the revenue is their sum (whatever else was paid before)
      const all = await list("state=settled&limit=1000");
      expect(all.payments.map((p: any) => p.transaction)).toEqual(
        expect.arrayContaining(paid.map((p) => p.transaction)),
      );
      const count = all.payments.length;
      expect(all.totals).toEqual([
        {
          network: "base-sepolia",
          asset: stack.devnet.token,
          amount: (BigInt(count) * PRICE).toString(),
          amount_usd: usd(BigInt(count) * PRICE),
          count,
        },
      ]);
    });
  });
});
