/**
 * Issue 14: kill -9 of one replica during paid traffic. Several buyers pay
 * through the balancer; the facilitator's answers are held back (the fault
 * proxy's `delay`, the suite's only fake), so when replica A dies every
 * settlement has landed on chain and A's rows are still pending. The
 * survivor's background reconciliation (RPC set: the chain decides; it runs
 * under a lease, which moves to B when A dies) must settle them: no double
 * charge, no lost payment. Every transfer to pay-to has exactly one settled
 * row, every settled row its transfer, and every buyer is served on the
 * proof they signed.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eventually } from "../support/eventually";
import { pgAvailable } from "../support/postgres";
import {
  buyer,
  type ChaosChain,
  type Cluster,
  ledgerAgainstChain,
  PRICE,
  signedFor,
  startChaosChain,
  startCluster,
} from "./cluster";

const BUYERS = 8;
const SONG = "paid for, whichever replica dies\n";

const hasPostgres = await pgAvailable("replica tests (issue 14)");

describe.skipIf(!hasPostgres)("kill -9 of a replica during paid traffic", () => {
  let chain: ChaosChain;
  let cluster: Cluster;
  beforeAll(async () => {
    chain = await startChaosChain(BUYERS);
    cluster = await startCluster(chain, { files: { "shop/song.txt": SONG } });
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
    await chain?.stop();
  });

  test("after the survivor's reconciliation: no double charge, no lost payment", async () => {
    const url = `${cluster.proxy.url}/x402/cid/${cluster.cids["shop/song.txt"]}`;
    const offer = await fetch(url);
    const proofs = await Promise.all(
      Array.from({ length: BUYERS }, (_, i) => signedFor(offer, buyer(chain, i), chain.devnet.token)),
    );
    const buy = (proof: string) =>
      fetch(url, { headers: { "PAYMENT-SIGNATURE": proof } }).then(async (r) => ({
        status: r.status,
        body: await r.text(),
      }));
    const balanceBefore = await cluster.balance();
    const landedBefore = chain.proxy.settled.length;

    chain.proxy.delayMs = 2000;
    chain.proxy.mode = "delay";
    const requests = proofs.map(buy);
    // Every settlement is on chain and its answer is still held back: A dies now.
    await eventually(() => chain.proxy.settled.length - landedBefore >= BUYERS, "every settlement landing", 60_000);
    const a = cluster.replicas.get("A")!;
    await a.kill9();
    const killedAt = performance.now();
    cluster.proxy.remove(a.url); // the balancer's health check takes it out
    // A died holding rows whose money had moved: pending, for the survivor to resolve from the chain.
    const [{ n: pendingAfterKill }] =
      await cluster.sql`SELECT count(*)::int AS n FROM payments WHERE state = 'pending'`;
    expect(pendingAfterKill).toBeGreaterThan(0);
    chain.proxy.mode = "pass";
    const answers = await Promise.all(requests);
    // Those on B were served; those on A lost their connection (the balancer's 502), nothing else.
    for (const r of answers) expect([200, 502]).toContain(r.status);
    expect(answers.some((r) => r.status === 502)).toBe(true);

    // The survivor resolves what A left pending, from the chain.
    await eventually(
      async () => (await cluster.sql`SELECT count(*)::int AS n FROM payments WHERE state = 'pending'`)[0].n === 0,
      "no payment pending",
      120_000,
    );
    console.info(
      `replicas: kill -9 left ${pendingAfterKill} pending rows; none pending ${((performance.now() - killedAt) / 1000).toFixed(1)} s after the kill`,
    );

    expect(await ledgerAgainstChain(cluster)).toEqual([]);
    const transfers = await cluster.transfers();
    expect(transfers).toHaveLength(BUYERS);
    expect(new Set(transfers.map((t) => t.from)).size).toBe(BUYERS); // each buyer charged once
    expect(await cluster.balance()).toBe(balanceBefore + BigInt(BUYERS) * PRICE);
    const [{ n: settled }] = await cluster.sql`SELECT count(*)::int AS n FROM payments WHERE state = 'settled'`;
    expect(settled).toBe(BUYERS);

    // Whoever lost the answer presents the same proof again and is served, without a second charge.
    for (const [i, r] of answers.entries()) {
      if (r.status === 200) {
        expect(r.body).toBe(SONG);
        continue;
      }
      const again = await buy(proofs[i]);
      expect(again.status).toBe(200);
      expect(again.body).toBe(SONG);
    }
    expect(await cluster.transfers()).toHaveLength(BUYERS);
  }, 240_000);
});
