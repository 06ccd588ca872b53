/**
 * The catalog's misses on PostgreSQL, where a miss is a query over the
 * network (`forCid` answers with a promise): concurrent requests for one CID
 * share one query (after a change, every request for a popular CID would
 * otherwise queue its own on the pool); a change while that query runs is
 * not hidden by it; a query that fails is not kept, so the next request asks
 * again.
 *
 * Real PostgreSQL instruction store; `forCid` calls are counted by a
 * wrapper that passes every call through, or, as `failingForCid` while
 * `down`, rejects (the fault: the database does not answer).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CatalogSources, createCatalog } from "../../src/gateway/catalog";
import { loadSettings } from "../../src/settings";
import { closeEngineStores, type EngineStores, engineStores } from "../instructions/engines";
import { pgAvailable, testServer } from "../support/postgres";

const USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const SELLER = "0x1111111111111111111111111111111111111111";
const requirement = (amount: string) => ({ network: "base-sepolia" as const, asset: USDC, pay_to: SELLER, amount });

const available = await pgAvailable("gateway catalog misses on PostgreSQL");
if (available) await testServer(); // its initdb takes longer than a hook's time limit

describe.skipIf(!available)("catalog misses on PostgreSQL", () => {
  let dir: string;
  let db: EngineStores;
  let settings: ReturnType<typeof loadSettings>;
  let cid: string;
  let instructionId: string;
  /** forCid calls that reached the real store (or the fault). */
  let asked: number;
  /** While true, forCid rejects. */
  let down: boolean;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "cidgate-catalog-misses-"));
    settings = loadSettings({
      CIDGATE_DB: join(dir, "db.sqlite"),
      PUBLIC_URL: "https://gw.example.com",
      CIDGATE_CONTENT_DIR: join(dir, "content"),
    });
    db = await engineStores("postgres", settings);
    mkdirSync(settings.contentDir);
    writeFileSync(join(settings.contentDir, "a.txt"), "paid words\n");
    await db.stores.content.index();
    cid = db.local.sqlite.query<{ cid: string }, []>("SELECT cid FROM content_files").get()!.cid;
    const inst = await db.stores.instructions.create({ name: "fee", requirements: [requirement("100")] });
    await db.stores.instructions.attachCid(inst.id, cid);
    instructionId = inst.id;
    await db.settled(); // the catalog_generation poll has seen these writes: no clear comes from them later
    asked = 0;
    down = false;
  }, 60_000);
  afterEach(async () => {
    await closeEngineStores();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The catalog over the real stores, its forCid counted; as `failingForCid`, it rejects while `down`. */
  function catalog() {
    const real = db.stores.instructions;
    const failingForCid: CatalogSources["instructions"] = {
      forCid: (c: string) => {
        asked++;
        return down ? Promise.reject(new Error("fault: the database does not answer")) : real.forCid(c);
      },
    };
    return createCatalog({ ...db.stores, instructions: failingForCid }, settings);
  }

  const amount = (p: Awaited<ReturnType<ReturnType<typeof createCatalog>["lookup"]>>) => p?.required.accepts[0]?.amount;

  test("20 concurrent lookups of one CID send one query; all get the priced file", async () => {
    const c = catalog();
    const answers = await Promise.all(Array.from({ length: 20 }, () => c.lookup(cid)));
    expect(asked).toBe(1);
    expect(answers.map(amount)).toEqual(Array(20).fill(100n));
    expect(amount(await c.lookup(cid))).toBe(100n); // now a hit
    expect(asked).toBe(1);
  });

  test("after a change, the next lookup asks again, even while a query from before the change runs", async () => {
    const c = catalog();
    expect(amount(await c.lookup(cid))).toBe(100n);
    expect(asked).toBe(1);

    await db.stores.instructions.update(instructionId, { requirements: [requirement("250")] });
    await db.settled();
    expect(amount(await c.lookup(cid))).toBe(250n);
    expect(asked).toBe(2);

    // A miss whose query is in flight, then a change (the signal the stores' writes bump), then a lookup:
    // it must not share the query from before the change.
    db.stores.changes.bump();
    const before = c.lookup(cid);
    expect(asked).toBe(3);
    db.stores.changes.bump();
    const after = c.lookup(cid);
    expect(asked).toBe(4);
    expect(amount(await before)).toBe(250n);
    expect(amount(await after)).toBe(250n);
  });

  test("a query that fails is shared by the lookups waiting on it and not kept: the next lookup asks again", async () => {
    const c = catalog();
    down = true;
    const failed = await Promise.allSettled(Array.from({ length: 20 }, () => c.lookup(cid)));
    expect(failed.map((r) => r.status)).toEqual(Array(20).fill("rejected"));
    expect(asked).toBe(1);

    down = false;
    expect(amount(await c.lookup(cid))).toBe(100n);
    expect(asked).toBe(2);
  });
});
