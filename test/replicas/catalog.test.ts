/**
 * Issue 14: what one replica changes, every replica sells (a price changed
 * through the management API on A is in B's 402 within a second, through
 * the polled catalog generation); and what one replica lacks, it never
 * charges for (a CID whose file is deployed on A only: B answers 404, no
 * row, no transfer).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eventually } from "../support/eventually";
import { pgAvailable } from "../support/postgres";
import {
  buyer,
  type ChaosChain,
  type Cluster,
  offeredAmount,
  offerFrom,
  PRICE,
  type Replica,
  signedFor,
  startChaosChain,
  startCluster,
} from "./cluster";

const INSTRUCTIONS = "/v3/x402/payment_instructions";
const EXTRA = "extra/api.txt";
const ONLY_A = "extra/only-a.txt";
const ONLY_A_TEXT = "deployed on A alone\n";

const hasPostgres = await pgAvailable("replica tests (issue 14)");

describe.skipIf(!hasPostgres)("the catalog across two replicas", () => {
  let chain: ChaosChain;
  let cluster: Cluster;
  let a: Replica;
  let b: Replica;
  let instructionId: string;

  /** A management API call on one replica, with a token signed by the shared secret. */
  const api = async (replica: Replica, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${replica.url}${INSTRUCTIONS}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${await cluster.token()}`,
        ...(body ? { "content-type": "application/json" } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = (await res.json()) as { data: { id: string } };
    if (!res.ok) throw new Error(`${method} ${path} on ${replica.name}: ${res.status} ${JSON.stringify(json)}`);
    return json.data;
  };
  const requirement = (amount: bigint) => ({
    network: "base-sepolia",
    asset: chain.devnet.token,
    pay_to: cluster.payTo,
    amount: amount.toString(),
  });
  /** The amount B's 402 asks for `file`, asked of B directly. */
  const amountOnB = async (file: string) => offeredAmount(await offerFrom(b.url, cluster.cids[file]));

  beforeAll(async () => {
    chain = await startChaosChain(2);
    cluster = await startCluster(chain, {
      files: { "shop/song.txt": "a song\n", [EXTRA]: "priced through the API\n" },
      only: { A: { [ONLY_A]: ONLY_A_TEXT } },
    });
    a = cluster.replicas.get("A")!;
    b = cluster.replicas.get("B")!;
    const created = await api(a, "POST", "", { name: "API-priced", payment_requirements: [requirement(PRICE)] });
    instructionId = created.id;
    await api(a, "PUT", `/${instructionId}/cids/${cluster.cids[EXTRA]}`);
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
    await chain?.stop();
  });

  test("a price changed through the API on A is what B's 402 asks", async () => {
    // B sells what A created, at A's price.
    await eventually(async () => (await amountOnB(EXTRA)) === PRICE.toString(), "B offering A's instruction");

    const changedAt = performance.now();
    await api(a, "PATCH", `/${instructionId}`, { payment_requirements: [requirement(2n * PRICE)] });
    const seen: (string | undefined)[] = [];
    await eventually(async () => {
      const amount = await amountOnB(EXTRA);
      seen.push(amount);
      return amount === (2n * PRICE).toString();
    }, "B offering the new price");
    console.info(
      `replicas: a price PATCHed on A was in B's 402 after ${(performance.now() - changedAt).toFixed(0)} ms (${seen.length} polls)`,
    );
    // Meanwhile B offered the old price or the new one, nothing else (no 404, no half-made offer).
    const either: (string | undefined)[] = [PRICE.toString(), (2n * PRICE).toString()];
    for (const amount of seen) expect(either).toContain(amount);
    expect(offeredAmount(await offerFrom(a.url, cluster.cids[EXTRA]))).toBe((2n * PRICE).toString());
  }, 60_000);

  test("a CID whose file is only on A: B answers 404 to a good proof and charges nothing; A sells it", async () => {
    await api(a, "PUT", `/${instructionId}/cids/${cluster.cids[ONLY_A]}`);
    // B has seen the mapping once it has seen a later change of the catalog (one generation number orders them).
    await api(a, "PATCH", `/${instructionId}`, { payment_requirements: [requirement(3n * PRICE)] });
    await eventually(async () => (await amountOnB(EXTRA)) === (3n * PRICE).toString(), "B past the mapping");

    const offerOnA = await offerFrom(a.url, cluster.cids[ONLY_A]);
    expect(offeredAmount(offerOnA)).toBe((3n * PRICE).toString());
    const proof = await signedFor(offerOnA, buyer(chain, 1), chain.devnet.token);
    const balanceBefore = await cluster.balance();

    const onB = await fetch(`${b.url}/x402/cid/${cluster.cids[ONLY_A]}`, { headers: { "PAYMENT-SIGNATURE": proof } });
    expect(onB.status).toBe(404);
    expect(((await onB.json()) as { error: { code: string } }).error.code).toBeString();
    expect([...(await cluster.sql`SELECT count(*)::int AS n FROM payments`)]).toEqual([{ n: 0 }]);
    expect(await cluster.transfers()).toEqual([]);
    expect(await cluster.balance()).toBe(balanceBefore);

    // The same proof was good: A, which has the file, sells it for it, once.
    const onA = await fetch(`${a.url}/x402/cid/${cluster.cids[ONLY_A]}`, { headers: { "PAYMENT-SIGNATURE": proof } });
    expect(onA.status).toBe(200);
    expect(await onA.text()).toBe(ONLY_A_TEXT);
    expect(await cluster.balance()).toBe(balanceBefore + 3n * PRICE);
    expect(await cluster.transfers()).toHaveLength(1);
  }, 60_000);
});
