/**
 * The chain decides, not the facilitator (issue 10, items 1-3), on the real
 * devnet with the real facilitator over HTTP. The only fake is the FAULT
 * INJECTOR between cidgate and that facilitator (chaos/fault-proxy.ts): it
 * lies about a settlement, or settles for real and then answers a failure.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  buy,
  buyerOf,
  type ChaosChain,
  type ChaosGateway,
  integrity,
  proofFor,
  rowOf,
  startChaosChain,
  startChaosGateway,
} from "../../chaos/stack";
import { localPublicClient } from "../../src/chain/devnet";
import { signProof } from "../gateway/fixtures";
import { eventually } from "../support/eventually";

const FILE = "the paid file: chain truth\n";

let chain: ChaosChain;
let gw: ChaosGateway;

beforeAll(async () => {
  chain = await startChaosChain(7);
  // A short facilitator bound: a dropped answer turns into an unconfirmed row quickly.
  gw = await startChaosGateway(chain, {
    rpc: true,
    files: { "file.txt": FILE },
    env: { FACILITATOR_TIMEOUT_MS: "1500" },
  });
});
afterAll(async () => {
  await gw?.stop();
  await chain?.stop();
});

const cid = () => gw.cids["file.txt"];
const balance = (i: number) =>
  localPublicClient(chain.devnet.rpcUrl).readContract({
    address: chain.devnet.token,
    abi: [
      {
        type: "function",
        name: "balanceOf",
        stateMutability: "view",
        inputs: [{ type: "address" }],
        outputs: [{ type: "uint256" }],
      },
    ] as const,
    functionName: "balanceOf",
    args: [buyerOf(chain, i).address],
  });
const entitlementsOf = (payer: string) =>
  gw.db.sqlite.query<{ n: number }, [string]>("SELECT count(*) AS n FROM entitlements WHERE payer = ?").get(payer)!.n;

describe("a facilitator that claims a settlement it never made", () => {
  test("502 JSON naming an untrusted facilitator, no byte of the file, the row kept, the error logged", async () => {
    const p = await proofFor(chain, 0);
    const before = await balance(0);
    chain.proxy.mode = "lie";
    const res = await buy(gw.url, cid(), p.header).finally(() => (chain.proxy.mode = "pass"));
    expect(res.status).toBe(502);
    expect(res.type).toContain("application/json");
    expect(JSON.parse(res.text).error.code).toBe("facilitator_untrusted");
    expect(res.text).not.toContain(FILE);
    const row = rowOf(gw.db, buyerOf(chain, 0).address, p.nonce)!;
    expect(row.state).toBe("pending");
    expect(row.error).toContain("untrusted facilitator");
    expect(gw.logLines.some((l) => l.includes('"level":50') && l.includes("untrusted facilitator"))).toBe(true);
    expect(await balance(0)).toBe(before);
    expect(entitlementsOf(buyerOf(chain, 0).address)).toBe(0);
  });

  test("the same proof again, once the facilitator is honest: settled for real and served, charged once", async () => {
    const p = await proofFor(chain, 1);
    const before = await balance(1);
    chain.proxy.mode = "lie";
    expect((await buy(gw.url, cid(), p.header).finally(() => (chain.proxy.mode = "pass"))).status).toBe(502);
    const again = await buy(gw.url, cid(), p.header);
    expect(again.status).toBe(200);
    expect(again.text).toBe(FILE);
    expect(rowOf(gw.db, buyerOf(chain, 1).address, p.nonce)!.state).toBe("settled");
    expect(await balance(1)).toBe(before - 10000n);
  });
});

describe("a facilitator that settles on chain, then answers a failure", () => {
  test("success:false invalid_transaction_state with the real hash: the buyer is served, the row settled with its entitlement", async () => {
    const p = await proofFor(chain, 2);
    const before = await balance(2);
    chain.proxy.mode = "failAfterSettle";
    const settledBefore = chain.proxy.settled.length;
    const res = await buy(gw.url, cid(), p.header).finally(() => (chain.proxy.mode = "pass"));
    const tx = chain.proxy.settled[settledBefore];
    expect(tx).toBeDefined(); // the real facilitator did settle
    expect(res.status).toBe(200);
    expect(res.text).toBe(FILE);
    const row = rowOf(gw.db, buyerOf(chain, 2).address, p.nonce)!;
    expect(row.state).toBe("settled");
    expect(row.txHash).toBe(tx);
    expect(entitlementsOf(buyerOf(chain, 2).address)).toBe(1);
    expect(await balance(2)).toBe(before - 10000n);
  });

  test("HTTP 400 unexpected_settle_error without a hash: the chain shows the payment, the buyer is served", async () => {
    const p = await proofFor(chain, 3);
    chain.proxy.mode = "http400AfterSettle";
    const res = await buy(gw.url, cid(), p.header).finally(() => (chain.proxy.mode = "pass"));
    expect(res.status).toBe(200);
    expect(res.text).toBe(FILE);
    expect(rowOf(gw.db, buyerOf(chain, 3).address, p.nonce)!.state).toBe("settled");
    expect(entitlementsOf(buyerOf(chain, 3).address)).toBe(1);
  });
});

describe("a refusal while the facilitator's transaction is still in flight", () => {
  test("released while the nonce is unused; once the transaction lands, the reconciliation settles it", async () => {
    const p = await proofFor(chain, 6);
    const payer = buyerOf(chain, 6).address;
    const rpc = localPublicClient(chain.devnet.rpcUrl);
    const settledBefore = chain.proxy.settled.length;
    await rpc.request({ method: "evm_setAutomine" as any, params: [false] as any });
    try {
      chain.proxy.mode = "refuseWhileSettling";
      chain.proxy.delayMs = 300;
      const res = await buy(gw.url, cid(), p.header).finally(() => (chain.proxy.mode = "pass"));
      expect(res.status).toBe(403);
      expect(res.text).not.toContain(FILE);
      expect(rowOf(gw.db, payer, p.nonce)!.state).toBe("failed");
    } finally {
      await rpc.request({ method: "evm_setAutomine" as any, params: [true] as any });
    }
    await rpc.request({ method: "evm_mine" as any, params: [] as any });
    await eventually(() => chain.proxy.settled.length > settledBefore, "the facilitator's transaction mined");
    await gw.running.reconciler.runOnce();
    const row = rowOf(gw.db, payer, p.nonce)!;
    expect(row.state).toBe("settled");
    expect(entitlementsOf(payer)).toBe(1);
    expect(await integrity(chain, gw.db)).toEqual([]);
  }, 60_000);
});

describe("background reconciliation", () => {
  test("a settle whose answer was lost is settled from the chain without the buyer coming back", async () => {
    const p = await proofFor(chain, 4);
    chain.proxy.mode = "drop";
    const settledBefore = chain.proxy.settled.length;
    const res = await buy(gw.url, cid(), p.header).finally(() => (chain.proxy.mode = "pass"));
    expect(res.status).toBe(500);
    expect(res.text).not.toContain(FILE);
    const payer = buyerOf(chain, 4).address;
    expect(rowOf(gw.db, payer, p.nonce)!.state).toBe("pending");
    const round = await gw.running.reconciler.runOnce();
    expect(round.settled).toBeGreaterThanOrEqual(1);
    const row = rowOf(gw.db, payer, p.nonce)!;
    expect(row.state).toBe("settled");
    expect(row.txHash).toBe(chain.proxy.settled[settledBefore]);
    expect(entitlementsOf(payer)).toBe(1);
  }, 30_000);

  test("the lied-about row is released once its authorization expires unused; ledger and chain agree", async () => {
    // A proof that expires in 12 s (the facilitator wants a few seconds of room), lied about: nothing moved, and it can no longer be used once expired.
    const now = Math.floor(Date.now() / 1000);
    const p = await signProof({
      version: 1,
      account: buyerOf(chain, 5),
      asset: chain.devnet.token,
      payTo: chain.devnet.seller.address,
      amount: "10000",
      validBefore: now + 12,
    });
    chain.proxy.mode = "lie";
    expect((await buy(gw.url, cid(), p.header).finally(() => (chain.proxy.mode = "pass"))).status).toBe(502);
    const payer = buyerOf(chain, 5).address;
    await eventually(
      async () => {
        await Bun.sleep(250);
        // A new block carries the chain's time past validBefore.
        await localPublicClient(chain.devnet.rpcUrl).request({ method: "evm_mine" as any, params: [] as any });
        await gw.running.reconciler.runOnce();
        return rowOf(gw.db, payer, p.nonce)!.state === "failed";
      },
      "the lied-about row released",
      30_000,
    );
    // The first test's lied-about row (still usable until its validBefore) is left alone or released, never settled.
    expect(await integrity(chain, gw.db)).toEqual([]);
  }, 60_000);
});
