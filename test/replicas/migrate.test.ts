/**
 * Issue 14: two replicas started at the same moment on an EMPTY database
 * migrate it once (serialized by an advisory lock) and both become ready;
 * both reconcile the same pricing YAML (serialized too), and the second
 * finds nothing to write.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pgAvailable } from "../support/postgres";
import {
  type ChaosChain,
  type Cluster,
  offeredAmount,
  offerFrom,
  PRICE,
  ready,
  startChaosChain,
  startCluster,
} from "./cluster";

const journal = JSON.parse(readFileSync(join(import.meta.dir, "../../drizzle-pg/meta/_journal.json"), "utf8")) as {
  entries: { tag: string; when: number }[];
};

const hasPostgres = await pgAvailable("replica tests (issue 14)");

describe.skipIf(!hasPostgres)("two replicas started at once on an empty database", () => {
  let chain: ChaosChain;
  let cluster: Cluster;
  beforeAll(async () => {
    chain = await startChaosChain(1);
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
    await chain?.stop();
  });

  test("both become ready; each migration ran once; the YAML made one instruction, once", async () => {
    // startCluster starts A and B together (Promise.all) on a database just created, empty.
    cluster = await startCluster(chain, { files: { "shop/song.txt": "a song\n" } });
    const [a, b] = [cluster.replicas.get("A")!, cluster.replicas.get("B")!];
    await Promise.all([ready(a), ready(b)]);

    // drizzle's journal of applied migrations: each of drizzle-pg/'s, once (created_at is its `when`).
    const applied = await cluster.sql`
      SELECT created_at::text AS "when", count(*)::int AS n FROM drizzle.__drizzle_migrations GROUP BY created_at
    `;
    expect([...applied].map((r) => `${r.when}x${r.n}`).sort()).toEqual(
      journal.entries.map((e) => `${e.when}x1`).sort(),
    );

    const instructions = await cluster.sql`SELECT version FROM payment_instructions`;
    expect([...instructions]).toEqual([{ version: 1 }]);
    for (const replica of [a, b])
      expect(offeredAmount(await offerFrom(replica.url, cluster.cids["shop/song.txt"]))).toBe(PRICE.toString());
  }, 120_000);
});
