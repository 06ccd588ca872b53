/**
 * Issue 14: one proof presented 50 times at once, split by a round-robin
 * balancer across two replicas on one PostgreSQL. The authorization is
 * settled once: one transfer on chain, one settled row. Every presentation
 * gets the file or a retryable 503 (Retry-After), never a refusal: a replica
 * that loses the claim waits for the winner's outcome. Presented again, the
 * same proof is served (no second charge).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
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

const SONG = "la la la, paid once whatever the replica\n";
const PRESENTATIONS = 50;
/** Retries of one 503, each after its Retry-After: a bound so a broken server fails the test instead of hanging it. */
const MAX_RETRIES = 12;

interface Answer {
  status: number;
  retryAfter: string | null;
  body: string;
}

const hasPostgres = await pgAvailable("replica tests (issue 14)");

describe.skipIf(!hasPostgres)("one proof, 50 presentations across two replicas", () => {
  let chain: ChaosChain;
  let cluster: Cluster;
  beforeAll(async () => {
    chain = await startChaosChain(1);
    cluster = await startCluster(chain, { files: { "shop/song.txt": SONG } });
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
    await chain?.stop();
  });

  test("settled exactly once: one transfer, one settled row, every answer a 200 or a 503 that a retry turns into a 200", async () => {
    const url = `${cluster.proxy.url}/x402/cid/${cluster.cids["shop/song.txt"]}`;
    const proof = await signedFor(await fetch(url), buyer(chain, 0), chain.devnet.token);
    const present = async (): Promise<Answer> => {
      const res = await fetch(url, { headers: { "PAYMENT-SIGNATURE": proof } });
      return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.text() };
    };
    const balanceBefore = await cluster.balance();
    const sentBefore = new Map(cluster.proxy.sent);

    const answers = await Promise.all(Array.from({ length: PRESENTATIONS }, present));

    // The balancer split them: both replicas were presented the proof.
    for (const [origin, n] of cluster.proxy.sent) expect(n - (sentBefore.get(origin) ?? 0)).toBeGreaterThan(0);
    for (const a of answers) {
      expect([200, 503]).toContain(a.status);
      if (a.status === 200) expect(a.body).toBe(SONG);
      else expect(a.retryAfter).toMatch(/^[1-9]\d*$/);
    }
    // Each 503 presents the same proof again after its Retry-After, as a client told to retry does.
    const retried = await Promise.all(
      answers
        .filter((a) => a.status === 503)
        .map(async (first) => {
          let last = first;
          for (let i = 0; i < MAX_RETRIES && last.status === 503; i++) {
            await Bun.sleep(Number(last.retryAfter) * 1000);
            last = await present();
            expect([200, 503]).toContain(last.status);
          }
          return last;
        }),
    );
    for (const r of retried) {
      expect(r.status).toBe(200);
      expect(r.body).toBe(SONG);
    }
    console.info(
      `replicas: ${PRESENTATIONS} presentations of one proof -> ${answers.filter((a) => a.status === 200).length} x 200, ${retried.length} x 503 (each 200 on retry)`,
    );

    expect(await cluster.balance()).toBe(balanceBefore + PRICE);
    const transfers = await cluster.transfers();
    expect(transfers).toHaveLength(1);
    expect(transfers[0].from).toBe(buyer(chain, 0).address.toLowerCase());
    const rows = await cluster.sql`SELECT state, count(*)::int AS n FROM payments GROUP BY state`;
    expect([...rows]).toEqual([{ state: "settled", n: 1 }]);
    expect(await ledgerAgainstChain(cluster)).toEqual([]);
  }, 180_000);
});
