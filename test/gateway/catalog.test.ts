/**
 * The catalog's cache invalidation: writes in this process are seen at once,
 * payments do not evict cached offers, and commits by another connection
 * (another process in real life) are seen without a write in this process.
 * Each test starts from its own database with one indexed file.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Db, openDb } from "../../src/db/client";
import { createCatalog } from "../../src/gateway/catalog";
import { reconcile } from "../../src/pricing/sync";
import { loadSettings } from "../../src/settings";
import { createStores, type Stores } from "../../src/stores";

const USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const SELLER = "0x1111111111111111111111111111111111111111";
const requirement = (amount: string) => ({ network: "base-sepolia" as const, asset: USDC, pay_to: SELLER, amount });

let dir: string;
let db: Db;
let stores: Stores;
let other: Db;
let settings: ReturnType<typeof loadSettings>;
let cid: string;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "cidgate-catalog-"));
  settings = loadSettings({
    CIDGATE_DB: join(dir, "db.sqlite"),
    PUBLIC_URL: "https://gw.example.com",
    CIDGATE_CONTENT_DIR: join(dir, "content"),
  });
  db = openDb(settings.db);
  stores = createStores(db, settings);
  other = openDb(settings.db); // stands for a CLI writing the same file
  mkdirSync(settings.contentDir);
  writeFileSync(join(settings.contentDir, "a.txt"), "paid words\n");
  await stores.content.index();
  cid = db.sqlite.query<{ cid: string }, []>("SELECT cid FROM content_files").get()!.cid;
});

afterEach(() => {
  other?.sqlite.close();
  db?.sqlite.close();
  rmSync(dir, { recursive: true, force: true });
});

const priceOf = (c: ReturnType<typeof createCatalog>) => c.lookup(cid)?.required.accepts[0]?.amount;

/** Prices the indexed file through the instructions store (what the API does). */
function priceFile(amount: string) {
  const inst = stores.instructions.create({ name: "fee", requirements: [requirement(amount)] });
  stores.instructions.attachCid(inst.id, cid);
  return inst;
}

test("writes through the stores are seen on the very next lookup", () => {
  const catalog = createCatalog(stores, settings);
  expect(catalog.lookup(cid)).toBeUndefined(); // not priced yet (and that answer is cached)
  const { instructions } = stores;
  const inst = instructions.create({ name: "fee", requirements: [requirement("100")] });
  instructions.attachCid(inst.id, cid);
  expect(priceOf(catalog)).toBe(100n);
  instructions.update(inst.id, { requirements: [requirement("250")] });
  expect(priceOf(catalog)).toBe(250n);
  instructions.detachCid(inst.id, cid);
  expect(catalog.lookup(cid)).toBeUndefined();
  instructions.attachCid(inst.id, cid);
  expect(priceOf(catalog)).toBe(250n);
});

test("a pricing reload and a content re-index are seen on the next lookup", async () => {
  priceFile("250");
  const catalog = createCatalog(stores, settings);
  expect(priceOf(catalog)).toBe(250n);
  // A file-declared instruction cannot take an API instruction's CID: price another file instead.
  writeFileSync(join(settings.contentDir, "b.txt"), "more paid words\n");
  await stores.content.index();
  const bCid = db.sqlite
    .query<{ cid: string }, [string]>("SELECT cid FROM content_files WHERE path = ?")
    .get("b.txt")!.cid;
  expect(catalog.lookup(bCid)).toBeUndefined();
  const result = reconcile(stores.instructions, [
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
  expect(catalog.lookup(bCid)?.required.accepts[0]?.amount).toBe(7n);
  // The file changes on disk and is re-indexed: the old CID is no longer sold.
  writeFileSync(join(settings.contentDir, "b.txt"), "changed words\n");
  await stores.content.index();
  expect(catalog.lookup(bCid)).toBeUndefined();
});

test("a payment does not throw the cached offer away", () => {
  priceFile("250");
  const catalog = createCatalog(stores, settings);
  const first = catalog.lookup(cid);
  expect(first?.required.accepts[0]?.amount).toBe(250n);
  const claim = stores.payments.claim({
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
  stores.payments.markSettled(claim.payment.id, `0x${"cd".repeat(32)}`);
  expect(catalog.lookup(cid)).toBe(first!); // the very same object: nothing was rebuilt
});

test("a commit by another connection is seen without any write in this process", async () => {
  priceFile("250");
  const catalog = createCatalog(stores, settings);
  expect(priceOf(catalog)).toBe(250n);
  // Raw SQL on the other connection: this process's generation does not move.
  other.sqlite.run("UPDATE payment_instructions SET requirements = ?, version = version + 1", [
    JSON.stringify([requirement("999")]),
  ]);
  // waits (polling, up to 10 s) for the change to show; how fast is not asserted here
  const until = Date.now() + 10_000;
  while (priceOf(catalog) !== 999n && Date.now() < until) await Bun.sleep(20);
  expect(priceOf(catalog)).toBe(999n);
});
