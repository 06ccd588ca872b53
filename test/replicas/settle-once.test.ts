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
import { SERVED_BY } from "./proxy";

const SONG = "la la la, paid once whatever the replica\n";
const PRESENTATIONS = 50;
/** Retries of one 503, each after its Retry-After: a bound so a broken server fails the test instead of hanging it. */
const MAX_RETRIES = 12;

interface Answer {
  /** The replica that answered. */
  by: string | null;
  status: number;
  retryAfter: string | null;
  body: string;
}

const hasPostgres = await pgAvailable("replica tests (issue 14)");

describe.skipIf(!hasPostgres)("one proof, 50 presentations across two replicas", () => {
  let chain: ChaosChain;
  let cluster: Cluster;
  beforeAll(async () => {
    chain = await startChaosChain(2);
    cluster = await startCluster(chain, { files: { "shop/song.txt": SONG } });
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
    await chain?.stop();
  });

  /** Presents `proof` for the song through the balancer. */
  const presenter = (url: string, proof: string) => async (): Promise<Answer> => {
    const res = await fetch(url, { headers: { "PAYMENT-SIGNATURE": proof } });
    return {
      by: res.headers.get(SERVED_BY),
      status: res.status,
      retryAfter: res.headers.get("retry-after"),
      body: await res.text(),
    };
  };

  /**
   * Each answer but a 200 presents the same proof again after its Retry-After (a second without
   * one), as a client told to present it again does, until a 200; every answer meanwhile is one of
   * `allowed`. The last answer of each.
   */
  const retryUntilServed = (answers: Answer[], present: () => Promise<Answer>, allowed: number[]) =>
    Promise.all(
      answers
        .filter((a) => a.status !== 200)
        .map(async (first) => {
          let last = first;
          for (let i = 0; i < MAX_RETRIES && last.status !== 200; i++) {
            await Bun.sleep(Number(last.retryAfter ?? 1) * 1000);
            last = await present();
            expect(allowed).toContain(last.status);
          }
          return last;
        }),
    );

  /** Each answer a 200 with the file, or a 503 carrying Retry-After. */
  const expectServedOrRetryable = (answers: Answer[]) => {
    for (const a of answers) {
      expect([200, 503]).toContain(a.status);
      if (a.status === 200) expect(a.body).toBe(SONG);
      else expect(a.retryAfter).toMatch(/^[1-9]\d*$/);
    }
  };

  test("settled exactly once: one transfer, one settled row, every answer a 200 or a 503 that a retry turns into a 200", async () => {
    const url = `${cluster.proxy.url}/x402/cid/${cluster.cids["shop/song.txt"]}`;
    const proof = await signedFor(await fetch(url), buyer(chain, 0), chain.devnet.token);
    const present = presenter(url, proof);
    const balanceBefore = await cluster.balance();
    const sentBefore = new Map(cluster.proxy.sent);

    const answers = await Promise.all(Array.from({ length: PRESENTATIONS }, present));

    // The balancer split them: both replicas were presented the proof.
    for (const [origin, n] of cluster.proxy.sent) expect(n - (sentBefore.get(origin) ?? 0)).toBeGreaterThan(0);
    expectServedOrRetryable(answers);
    const retried = await retryUntilServed(answers, present, [200, 503]);
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

  test("a settle that outlasts the facilitator timeout: never a refusal, the waiting replica answers 200 or 503, every retry ends 200, one transfer", async () => {
    const url = `${cluster.proxy.url}/x402/cid/${cluster.cids["shop/song.txt"]}`;
    const payer = buyer(chain, 1);
    const proof = await signedFor(await fetch(url), payer, chain.devnet.token);
    const present = presenter(url, proof);
    const balanceBefore = await cluster.balance();
    // The facilitator's answer is held past FACILITATOR_TIMEOUT_MS (5 s), while the money moves on chain:
    // the replica that sent the settle cannot know its outcome in time, nor can the one waiting on it.
    chain.proxy.delayMs = 7000;
    chain.proxy.mode = "delay";
    let answers: Answer[];
    try {
      answers = await Promise.all(Array.from({ length: PRESENTATIONS }, present));
    } finally {
      chain.proxy.mode = "pass";
    }
    const codeOf = (a: Answer) => (JSON.parse(a.body) as { error: { code: string } }).error.code;
    for (const a of answers) {
      if (a.status === 200) expect(a.body).toBe(SONG);
      else if (a.status === 503) expect(a.retryAfter).toMatch(/^[1-9]\d*$/);
      else {
        // One server's answer to its own settle going unanswered: "present the same proof again later".
        expect(a.status).toBe(500);
        expect(codeOf(a)).toBe("facilitator_unavailable");
      }
    }
    expect(answers.some((a) => a.status !== 200)).toBe(true); // the fault took effect
    // Only the replica whose own settle went unanswered says so; the other waited for it (200 or 503).
    expect(new Set(answers.filter((a) => a.status === 500).map((a) => a.by)).size).toBeLessThanOrEqual(1);
    const retried = await retryUntilServed(answers, present, [200, 500, 503]);
    for (const r of retried) {
      expect(r.status).toBe(200);
      expect(r.body).toBe(SONG);
    }
    const count = (status: number) => answers.filter((a) => a.status === status).length;
    console.info(
      `replicas: settle held past the timeout: ${count(200)} x 200, ${count(503)} x 503, ${count(500)} x 500 facilitator_unavailable (one replica's); each 200 on retry`,
    );

    expect(await cluster.balance()).toBe(balanceBefore + PRICE);
    expect((await cluster.transfers()).filter((t) => t.from === payer.address.toLowerCase())).toHaveLength(1);
    const rows = await cluster.sql`
      SELECT state, count(*)::int AS n FROM payments WHERE lower(payer) = ${payer.address.toLowerCase()} GROUP BY state
    `;
    expect([...rows]).toEqual([{ state: "settled", n: 1 }]);
    expect(await ledgerAgainstChain(cluster)).toEqual([]);
  }, 240_000);
});
