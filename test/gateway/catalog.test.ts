/**
 * The catalog's cache invalidation, on both engines: writes in this process
 * are seen at once, payments do not evict cached offers, and commits by
 * another connection (another process in real life: a CLI on the SQLite
 * file, another replica on PostgreSQL, seen through catalog_generation's
 * poll) are seen without a write in this process. Each test starts from its
 * own database with one indexed file.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCatalog } from "../../src/gateway/catalog";
import { reconcile } from "../../src/pricing/sync";
import { loadSettings } from "../../src/settings";
import { closeEngineStores, type EngineStores, engineStores, enginesHere } from "../instructions/engines";
import { eventually } from "../support/eventually";

const USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const SELLER = "0x1111111111111111111111111111111111111111";
const requirement = (amount: string) => ({ network: "base-sepolia" as const, asset: USDC, pay_to: SELLER, amount });

const engines = await enginesHere("gateway catalog");
afterEach(closeEngineStores);

describe.each(engines)("%s", (engine) => {
  let dir: string;
  let db: EngineStores;
  let settings: ReturnType<typeof loadSettings>;
  let cid: string;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "cidgate-catalog-"));
    settings = loadSettings({
      CIDGATE_DB: join(dir, "db.sqlite"),
      PUBLIC_URL: "https://gw.example.com",
      CIDGATE_CONTENT_DIR: join(dir, "content"),
    });
    db = await engineStores(engine, settings, engine === "sqlite" ? settings.db : undefined);
    mkdirSync(settings.contentDir);
    writeFileSync(join(settings.contentDir, "a.txt"), "paid words\n");
    await db.stores.content.index();
    cid = db.local.sqlite.query<{ cid: string }, []>("SELECT cid FROM content_files").get()!.cid;
  });

  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const priceOf = async (c: ReturnType<typeof createCatalog>) => (await c.lookup(cid))?.required.accepts[0]?.amount;

  /** Prices the indexed file through the instructions store (what the API does). */
  async function priceFile(amount: string) {
    const inst = await db.stores.instructions.create({ name: "fee", requirements: [requirement(amount)] });
    await db.stores.instructions.attachCid(inst.id, cid);
    return inst;
  }

  test("writes through the stores are seen on the very next lookup", async () => {
    const catalog = createCatalog(db.stores, settings);
    expect(await catalog.lookup(cid)).toBeUndefined(); // not priced yet (and that answer is cached)
    const { instructions } = db.stores;
    const inst = await instructions.create({ name: "fee", requirements: [requirement("100")] });
    await instructions.attachCid(inst.id, cid);
    expect(await priceOf(catalog)).toBe(100n);
    await instructions.update(inst.id, { requirements: [requirement("250")] });
    expect(await priceOf(catalog)).toBe(250n);
    await instructions.detachCid(inst.id, cid);
    expect(await catalog.lookup(cid)).toBeUndefined();
    await instructions.attachCid(inst.id, cid);
    expect(await priceOf(catalog)).toBe(250n);
  });

  test("a pricing reload and a content re-index are seen on the next lookup", async () => {
    await priceFile("250");
    const catalog = createCatalog(db.stores, settings);
    expect(await priceOf(catalog)).toBe(250n);
    // A file-declared instruction cannot take an API instruction's CID: price another file instead.
    writeFileSync(join(settings.contentDir, "b.txt"), "more paid words\n");
    await db.stores.content.index();
    const bCid = db.local.sqlite
      .query<{ cid: string }, [string]>("SELECT cid FROM content_files WHERE path = ?")
      .get("b.txt")!.cid;
    expect(await catalog.lookup(bCid)).toBeUndefined();
    const result = await reconcile(db.stores.instructions, [
      {
        key: "b",
        source: "file:p.yaml#b",
        name: "b",
        description: null,
        requirements: [requirement("7")],
        requirementsJson: JSON.stringify([requirement("7")]),
        access: "forever",
        access_scope: "cid",
        cids: [{ cid: bCid, at: { file: "p.yaml", line: 1, column: 1 } }],
      } as unknown as Parameters<typeof reconcile>[1][number],
    ]);
    expect(result.ok).toBe(true);
    expect((await catalog.lookup(bCid))?.required.accepts[0]?.amount).toBe(7n);
    // The file changes on disk and is re-indexed: the old CID is no longer sold.
    writeFileSync(join(settings.contentDir, "b.txt"), "changed words\n");
    await db.stores.content.index();
    expect(await catalog.lookup(bCid)).toBeUndefined();
  });

  test("a payment does not throw the cached offer away", async () => {
    await priceFile("250");
    // On PostgreSQL this replica's own writes also come back through the poll: once it has them, the
    // catalog's cache moves only with new catalog writes.
    await db.settled();
    const catalog = createCatalog(db.stores, settings);
    const first = await catalog.lookup(cid);
    expect(first?.required.accepts[0]?.amount).toBe(250n);
    const claim = await db.stores.payments.claim({
      network: "base-sepolia",
      asset: USDC,
      payer: SELLER,
      nonce: `0x${"ab".repeat(32)}`,
      cid,
      instructionId: first!.instruction.id,
      instructionVersion: first!.instruction.version,
      amount: "250",
      payTo: SELLER,
      validBefore: 9_999_999_999n,
      x402Version: 2,
      proofHash: "h",
    });
    expect(claim.claimed).toBe(true);
    await db.stores.payments.markSettled(claim.payment.id, `0x${"cd".repeat(32)}`);
    expect(catalog.lookup(cid)).toBe(first!); // the very same object, at once: nothing was rebuilt
  });

  test("a commit by another connection is seen without any write in this process", async () => {
    await priceFile("250");
    const catalog = createCatalog(db.stores, settings);
    expect(await priceOf(catalog)).toBe(250n);
    // Raw SQL on another connection (a CLI on the file; another replica's pool): this process's
    // generation does not move.
    const other = await engineStores(engine, settings, db.location);
    const requirements = JSON.stringify([requirement("999")]);
    if (other.engine === "sqlite") {
      other.local.sqlite.run("UPDATE payment_instructions SET requirements = ?, version = version + 1", [requirements]);
    } else {
      await other.pg!
        .sql`UPDATE payment_instructions SET requirements = ${requirements}::text::json, version = version + 1`;
    }
    // Waits (polling) for the change to show; how fast is not asserted here.
    await eventually(async () => (await priceOf(catalog)) === 999n, "the other connection's price");
    expect(await priceOf(catalog)).toBe(999n);
  });
});
