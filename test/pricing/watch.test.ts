/**
 * Hot reload through real filesystem events: every kind of save is picked up
 * and served without a restart, and editors' ways of saving never cost an
 * instruction its id. Each change is awaited by polling (eventually, up to
 * 15 s); how fast it lands is bench material, not asserted here.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cidOfBytes } from "../../src/content/cid";
import { type Db, openDb } from "../../src/db/client";
import { createPricing, type Pricing } from "../../src/pricing/service";
import { startWatchers, type Watchers } from "../../src/pricing/watch";
import { createStores, type SqliteStores } from "../../src/stores";
import { eventually } from "../support/eventually";
import { CID_A, CID_B, CID_C, instruction, pricingFile, tempDirs } from "./helpers";

let dirs: ReturnType<typeof tempDirs>;
let db: Db;
let stores: SqliteStores;
let pricing: Pricing;
let watchers: Watchers;

beforeAll(async () => {
  dirs = tempDirs();
  db = openDb(":memory:");
  dirs.write(
    "a.yaml",
    pricingFile(instruction("one", { cids: [CID_A] }), instruction("docs", { files: ["docs/*.md"] })),
  );
  stores = createStores(db, dirs.settings);
  await stores.content.index();
  // CONFIG_SETTLE_MS as the server runs it: editors' saves are what this file tests.
  pricing = createPricing({ ...stores, settings: dirs.settings, env: {}, settleMs: dirs.settings.configSettleMs });
  expect((await pricing.reload("start")).result).toBe("applied");
  watchers = startWatchers({ content: stores.content, settings: dirs.settings, pricing });
});
afterAll(async () => {
  await watchers.close();
  db.sqlite.close();
  dirs.cleanup();
});

const amountOf = (cid: string) => stores.instructions.forCid(cid)?.requirements[0].amount;
const idOf = (cid: string) => stores.instructions.forCid(cid)?.id;

describe("watching pricing and content", () => {
  test("an editor's atomic save (write a temp file, rename over) is served", async () => {
    const id = idOf(CID_A);
    dirs.write(
      ".a.yaml.swp",
      pricingFile(instruction("one", { cids: [CID_A], price: "$0.02" }), instruction("docs", { files: ["docs/*.md"] })),
    );
    renameSync(join(dirs.configDir, ".a.yaml.swp"), join(dirs.configDir, "a.yaml"));
    await eventually(() => amountOf(CID_A) === "20000");
    expect(idOf(CID_A)).toBe(id);
  });

  test("a plain in-place save, a new file and a deleted file are all picked up", async () => {
    writeFileSync(
      join(dirs.configDir, "a.yaml"),
      pricingFile(instruction("one", { cids: [CID_A], price: "$0.03" }), instruction("docs", { files: ["docs/*.md"] })),
    );
    await eventually(() => amountOf(CID_A) === "30000");

    dirs.write("more/b.yml", pricingFile(instruction("two", { cids: [CID_B] })));
    await eventually(() => amountOf(CID_B) === "10000");

    rmSync(join(dirs.configDir, "more/b.yml"));
    await eventually(() => idOf(CID_B) === undefined);
  });

  test("saving by moving the old file aside, or truncating first, keeps every id", async () => {
    const id = idOf(CID_A);
    const file = join(dirs.configDir, "a.yaml");
    // vim's default: rename the original to a backup, then write a new file.
    renameSync(file, `${file}~`);
    await Bun.sleep(30);
    writeFileSync(
      file,
      pricingFile(instruction("one", { cids: [CID_A], price: "$0.04" }), instruction("docs", { files: ["docs/*.md"] })),
    );
    await eventually(() => amountOf(CID_A) === "40000");
    expect(idOf(CID_A)).toBe(id);

    // Truncate, pause, then write.
    writeFileSync(file, "");
    await Bun.sleep(120);
    writeFileSync(
      file,
      pricingFile(instruction("one", { cids: [CID_A], price: "$0.05" }), instruction("docs", { files: ["docs/*.md"] })),
    );
    await eventually(() => amountOf(CID_A) === "50000");
    expect(idOf(CID_A)).toBe(id);
    rmSync(`${file}~`);
  });

  test("a broken save is reported and the last good state keeps serving", async () => {
    writeFileSync(join(dirs.configDir, "a.yaml"), "instructions:\n  one: [broken\n");
    await eventually(() => pricing.status().lastReload?.result === "rejected");
    expect(amountOf(CID_A)).toBe("50000");
    writeFileSync(
      join(dirs.configDir, "a.yaml"),
      pricingFile(
        instruction("one", { cids: [CID_A, CID_C], price: "$0.06" }),
        instruction("docs", { files: ["docs/*.md"] }),
      ),
    );
    await eventually(() => amountOf(CID_C) === "60000");
  });

  test("a new content file matching files: is indexed and priced without a restart", async () => {
    const text = "# fresh\n";
    const cid = (await cidOfBytes(new TextEncoder().encode(text))).toString();
    dirs.write("docs/fresh.md", text, dirs.contentDir);
    await eventually(() => idOf(cid) !== undefined);
    expect(stores.instructions.forCid(cid)?.source).toBe("file:a.yaml#docs");
    rmSync(join(dirs.contentDir, "docs/fresh.md"));
    await eventually(() => idOf(cid) === undefined);
  });
});
