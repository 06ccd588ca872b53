/**
 * A settle whose outcome never reached the gateway, on the real devnet: the
 * answer lost after the transaction went out, a transaction not mined within
 * RECEIPT_TIMEOUT_SECONDS (`settlement_pending`), and a settle that never
 * left. The buyer who paid gets the file when presenting the same proof
 * again; nobody is charged twice; nothing is served before the chain has it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { erc20Abi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { createApp } from "../../src/app";
import { localPublicClient } from "../../src/chain/devnet";
import { createAccessTokens } from "../../src/entitlements/access-token";
import { createSiwx } from "../../src/entitlements/siwx";
import { FacilitatorUnavailableError, type SettleResponse } from "../../src/facilitator/types";
import { createCatalog } from "../../src/gateway/catalog";
import { createPurchase } from "../../src/gateway/purchase";
import { createLogger } from "../../src/http/logging";
import { paymentLookup } from "../../src/ledger/chain-lookup";
import { createLedgerSettler } from "../../src/ledger/settler";
import { createTestStack, STACK_JWT_SECRET, type TestStack } from "../e2e/stack";
import { txCount } from "../facilitator/helpers";
import { signProof } from "./fixtures";

const FILE = "the paid file\n";
const OTHER = "another paid file\n";

/** Which fault the FAKE wrapper injects into settle; "none" forwards untouched. */
let fault: "none" | "lostAnswer" | "neverSent" = "none";
/** What the real facilitator answered to the last settle the wrapper forwarded. */
let lastRealSettle: SettleResponse | undefined;
let settleCalls = 0;
let verifyCalls = 0;

let stack: TestStack;

beforeAll(async () => {
  stack = await createTestStack({
    files: { "file.txt": FILE, "other.txt": OTHER },
    buyers: 7,
    env: { RECEIPT_TIMEOUT_SECONDS: "1" },
    // lostAnswerFacilitator (a fake): settles for real, then the answer is "lost" on its way back.
    wrapFacilitator: (real) => ({
      verify: (r) => (verifyCalls++, real.verify(r)),
      async settle(r) {
        settleCalls++;
        if (fault === "neverSent")
          throw new FacilitatorUnavailableError("facilitator settle: no answer within 20000 ms");
        lastRealSettle = await real.settle(r);
        if (fault === "lostAnswer")
          throw new FacilitatorUnavailableError("facilitator settle: no answer within 20000 ms");
        return lastRealSettle;
      },
      supported: () => real.supported(),
    }),
  });
});
afterAll(async () => {
  await stack?.stop();
});

const url = (name: string) => `${stack.url}/x402/cid/${stack.cids[name]}`;
const buyer = (i: number) => privateKeyToAccount(stack.devnet.buyers[i].privateKey);
const proof = (i: number) =>
  signProof({
    version: 1,
    account: buyer(i),
    asset: stack.devnet.token,
    payTo: stack.devnet.seller.address,
    amount: "10000",
  });
const rowOf = (i: number, nonce: string) =>
  stack.stores.payments.find({
    network: "base-sepolia",
    asset: stack.devnet.token,
    payer: buyer(i).address,
    nonce: nonce.toLowerCase(),
  })!;
const rpc = () => localPublicClient(stack.devnet.rpcUrl);

/** Transfers of the token from the buyer to the seller, on chain. */
async function charges(i: number) {
  const logs = await rpc().getContractEvents({
    address: stack.devnet.token,
    abi: erc20Abi,
    eventName: "Transfer",
    args: { from: buyer(i).address, to: stack.devnet.seller.address },
    fromBlock: 0n,
  });
  return logs.map((l) => l.transactionHash);
}

async function get(name: string, header: string, app?: ReturnType<typeof createApp>) {
  const request = new Request(url(name), { headers: { "X-PAYMENT": header } });
  const res = app ? await app.handle(request) : await fetch(request);
  const text = await res.text();
  const receipt = res.headers.get("x-payment-response");
  return {
    status: res.status,
    text,
    receipt: receipt ? (decodePaymentResponseHeader(receipt) as any) : undefined,
    retryAfter: res.headers.get("retry-after"),
  };
}

async function withAutomineOff<T>(run: () => Promise<T>): Promise<T> {
  await rpc().request({ method: "evm_setAutomine" as any, params: [false] as any });
  try {
    return await run();
  } finally {
    await rpc().request({ method: "evm_setAutomine" as any, params: [true] as any });
  }
}
const mine = () => rpc().request({ method: "evm_mine" as any, params: [] as any });

/** The same app without RPC_URL: unconfirmed settlements are resolved by the facilitator alone. */
const appWithoutRpc = () =>
  createApp({
    settings: { ...stack.settings, rpcUrl: undefined },
    db: stack.db,
    stores: stack.stores,
    log: createLogger("silent"),
    jwtSecret: STACK_JWT_SECRET,
    facilitator: stack.facilitator,
  });

describe("the settle answer is lost after the transaction went out", () => {
  test("500 first; the same proof again gets the file, with the real transaction, charged once", async () => {
    const p = await proof(0);
    const balance = await stack.balanceOf(buyer(0).address);
    fault = "lostAnswer";
    const first = await get("file.txt", p.header).finally(() => (fault = "none"));
    expect(first.status).toBe(500);
    expect(first.text).not.toContain(FILE);
    expect(first.receipt).toBeUndefined();
    // The money did move: the real facilitator settled it.
    expect(lastRealSettle?.success).toBe(true);
    const tx = lastRealSettle!.transaction as `0x${string}`;
    expect(await charges(0)).toEqual([tx]);
    const kept = rowOf(0, p.nonce);
    expect(kept.state).toBe("pending");
    expect(kept.error).toStartWith("settlement unconfirmed");

    const verifiesBefore = verifyCalls;
    const again = await get("file.txt", p.header);
    expect(again.status).toBe(200);
    expect(again.text).toBe(FILE);
    expect(again.receipt).toMatchObject({ success: true, transaction: tx, payer: buyer(0).address });
    // Resolved from the chain: not verified afresh (the nonce is spent) and not settled again.
    expect(verifyCalls).toBe(verifiesBefore);
    expect(rowOf(0, p.nonce)).toMatchObject({ state: "settled", txHash: tx, error: null });
    expect(await charges(0)).toEqual([tx]);
    expect(await stack.balanceOf(buyer(0).address)).toBe(balance - 10000n);

    // And from then on it is an ordinary paid proof.
    expect((await get("file.txt", p.header)).status).toBe(200);
    expect((await get("other.txt", p.header)).status).toBe(403);
    expect(await charges(0)).toEqual([tx]);
  });

  test("without an RPC the gateway cannot confirm it and serves nothing; with one, the same proof is served", async () => {
    const p = await proof(1);
    fault = "lostAnswer";
    const first = await get("file.txt", p.header).finally(() => (fault = "none"));
    expect(first.status).toBe(500);
    const tx = lastRealSettle!.transaction as `0x${string}`;

    // The facilitator alone: settling again is refused (the nonce is spent), so the outcome stays unknown.
    const blind = await get("file.txt", p.header, appWithoutRpc());
    expect(blind.status).toBe(403);
    expect(blind.text).not.toContain(FILE);
    const row = rowOf(1, p.nonce);
    expect(row.state).toBe("pending");
    expect(row.error).toStartWith("settlement unconfirmed");

    const served = await get("file.txt", p.header);
    expect(served.status).toBe(200);
    expect(served.receipt.transaction).toBe(tx);
    expect(await charges(1)).toEqual([tx]);
  });
});

describe("concurrent retries of an unconfirmed proof", () => {
  test("one resolution, every request served, still one charge", async () => {
    const p = await proof(2);
    fault = "lostAnswer";
    expect((await get("file.txt", p.header).finally(() => (fault = "none"))).status).toBe(500);
    const tx = lastRealSettle!.transaction;
    const settles = settleCalls;
    const results = await Promise.all(Array.from({ length: 10 }, () => get("file.txt", p.header)));
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(new Set(results.map((r) => r.receipt.transaction))).toEqual(new Set([tx]));
    expect(settleCalls).toBe(settles);
    expect((await charges(2)).filter((h) => h === tx).length).toBe(1);
  });
});

describe("the settle never reached the chain", () => {
  test("500 first; the same proof again is settled by the facilitator, once", async () => {
    const p = await proof(3); // a buyer who owns neither file yet
    const before = await charges(3);
    fault = "neverSent";
    const first = await get("other.txt", p.header).finally(() => (fault = "none"));
    expect(first.status).toBe(500);
    expect(await charges(3)).toEqual(before);
    expect(rowOf(3, p.nonce).state).toBe("pending");

    // While unconfirmed, the authorization cannot pay for other content.
    const elsewhere = await get("file.txt", p.header);
    expect(elsewhere.status).toBe(403);
    expect(JSON.parse(elsewhere.text).reason).toBe("payment_in_progress");

    const again = await get("other.txt", p.header);
    expect(again.status).toBe(200);
    expect(again.text).toBe(OTHER);
    const after = await charges(3);
    expect(after.length).toBe(before.length + 1);
    expect(rowOf(3, p.nonce)).toMatchObject({ state: "settled", txHash: again.receipt.transaction });
  });
});

describe("settlement_pending: the transaction is not mined within RECEIPT_TIMEOUT_SECONDS", () => {
  test("503 and no content until it is mined; then the same proof is served, charged once", async () => {
    const p = await proof(0);
    const before = await charges(0);
    await withAutomineOff(async () => {
      const first = await get("other.txt", p.header);
      expect(first.status).toBe(503);
      expect(first.retryAfter).toBe("5");
      expect(JSON.parse(first.text).error.code).toBe("settlement_pending");
      expect(first.text).not.toContain(OTHER);
      expect(lastRealSettle).toMatchObject({ success: false, errorReason: "settlement_pending" });
      const pendingTx = lastRealSettle!.transaction;
      expect(rowOf(0, p.nonce).error).toContain(pendingTx);
      // the relayer's transactions, mempool included: the first settle sent one
      const sent = await txCount(stack.devnet, stack.devnet.relayer.address);

      // Still not mined: asked again, still pending, and no second transaction is sent.
      const still = await get("other.txt", p.header);
      expect(still.status).toBe(503);
      expect(still.text).not.toContain(OTHER);
      expect(rowOf(0, p.nonce).state).toBe("pending");
      expect(await txCount(stack.devnet, stack.devnet.relayer.address)).toBe(sent);
      expect(lastRealSettle?.transaction).toBe(pendingTx); // the retry joined the same transaction

      await mine();
      const served = await get("other.txt", p.header);
      expect(served.status).toBe(200);
      expect(served.text).toBe(OTHER);
      expect(served.receipt.transaction).toBe(pendingTx);
      expect(rowOf(0, p.nonce)).toMatchObject({ state: "settled", txHash: pendingTx });
    });
    const after = await charges(0);
    expect(after.length).toBe(before.length + 1);
  });

  test("without an RPC, the facilitator's own pending transaction resolves it", async () => {
    const app = appWithoutRpc();
    const p = await proof(1);
    const before = await charges(1);
    await withAutomineOff(async () => {
      const first = await get("other.txt", p.header, app);
      expect(first.status).toBe(503);
      expect(first.text).not.toContain(OTHER);
      const pendingTx = lastRealSettle!.transaction;
      await mine();
      const served = await get("other.txt", p.header, app);
      expect(served.status).toBe(200);
      expect(served.text).toBe(OTHER);
      expect(served.receipt.transaction).toBe(pendingTx);
    });
    expect((await charges(1)).length).toBe(before.length + 1);
  });
});

describe("an unconfirmed settlement, then the buyer's client signs a fresh authorization", () => {
  // Stock x402 clients cannot present the same proof again: after a 500 they sign a new one.
  test("with an RPC: the chain says the first one paid, so the new one is served on it, never charged", async () => {
    const p1 = await proof(4);
    fault = "lostAnswer";
    expect((await get("file.txt", p1.header).finally(() => (fault = "none"))).status).toBe(500);
    const tx = lastRealSettle!.transaction;
    const settles = settleCalls;
    const p2 = await proof(4);
    const fresh = await get("file.txt", p2.header);
    expect(fresh.status).toBe(200);
    expect(fresh.text).toBe(FILE);
    expect(fresh.receipt.transaction).toBe(tx);
    expect(settleCalls).toBe(settles);
    expect(await charges(4)).toEqual([tx as `0x${string}`]);
    expect(rowOf(4, p1.nonce)).toMatchObject({ state: "settled", txHash: tx });
    expect(rowOf(4, p2.nonce)).toBeUndefined();
    expect(
      stack.stores.entitlements.active(
        buyer(4).address,
        stack.cids["file.txt"],
        stack.instruction.id,
        Math.floor(Date.now() / 1000),
      ),
    ).toMatchObject({ paymentId: rowOf(4, p1.nonce).id });
  });

  test("without an RPC: nothing can be known, so the new one is 503 and never charged", async () => {
    const app = appWithoutRpc();
    const p1 = await proof(5);
    fault = "lostAnswer";
    expect((await get("file.txt", p1.header, app).finally(() => (fault = "none"))).status).toBe(500);
    const tx = lastRealSettle!.transaction;
    const p2 = await proof(5);
    const fresh = await get("file.txt", p2.header, app);
    expect(fresh.status).toBe(503);
    expect(JSON.parse(fresh.text).error.code).toBe("settlement_pending");
    expect(fresh.retryAfter).toBe("5");
    expect(rowOf(5, p2.nonce)).toBeUndefined();
    expect(await charges(5)).toEqual([tx as `0x${string}`]);
    // still unresolved: the first row waits for the chain (or an operator), pending, never released
    expect(rowOf(5, p1.nonce)).toMatchObject({ state: "pending" });
  });

  test("the database refusing to record a settlement that landed: the row is kept unconfirmed, and the buyer's next authorization is served on the chain's word", async () => {
    // Fault injection (named): the settle-and-grant transaction fails once, as SQLITE_BUSY or a full disk would.
    const payments = stack.stores.payments;
    let failNext = true;
    const settler = createLedgerSettler({
      payments,
      entitlements: stack.stores.entitlements,
      transaction: (fn) => {
        if (failNext) {
          failNext = false;
          throw new Error("SQLITE_BUSY: database is locked (injected)");
        }
        return stack.db.sqlite.transaction(fn)();
      },
      facilitator: stack.facilitator,
      timeoutMs: 20_000,
      lookup: paymentLookup(stack.settings),
    });
    const purchase = createPurchase({
      catalog: createCatalog(stack.stores, { ...stack.settings, publicUrl: stack.url }),
      payments,
      settler,
      entitlements: stack.stores.entitlements,
      accessTokens: createAccessTokens({ managementSecret: STACK_JWT_SECRET }),
      accessTokenTtlSeconds: 3600,
      siwx: createSiwx({ publicUrl: stack.url, secret: STACK_JWT_SECRET, nonces: stack.stores.siwxNonces }),
      paymentIdentifiers: stack.stores.paymentIdentifiers,
    });
    const cid = stack.cids["other.txt"];
    const p1 = await proof(6);
    const first = await purchase.decide({ cid, credentials: { xPayment: p1.header }, charge: true });
    expect(first).toMatchObject({ kind: "unavailable" });
    const landed = await charges(6);
    expect(landed).toHaveLength(1);
    expect(rowOf(6, p1.nonce)).toMatchObject({ state: "pending" });
    expect(rowOf(6, p1.nonce).error).toStartWith("settlement unconfirmed");
    const p2 = await proof(6);
    const second = await purchase.decide({ cid, credentials: { xPayment: p2.header }, charge: true });
    expect(second).toMatchObject({ kind: "serve", receipt: { transaction: landed[0] } });
    expect(await charges(6)).toEqual(landed);
    expect(rowOf(6, p1.nonce)).toMatchObject({ state: "settled", txHash: landed[0] });
  });
});
