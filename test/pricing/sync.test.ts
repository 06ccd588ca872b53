import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { type Db, openDb } from "../../src/db/client";
import { createPricing } from "../../src/pricing/service";
import { createStores, type Stores } from "../../src/stores";
import { CID_A, CID_B, CID_C, instruction, PAY_TO, pricingFile, tempDirs, USDC } from "./helpers";

let dirs: ReturnType<typeof tempDirs>;
let db: Db;
let stores: Stores;
beforeEach(() => {
  dirs = tempDirs();
  db = openDb(":memory:");
  stores = createStores(db, dirs.settings);
});
afterEach(() => {
  db.sqlite.close();
  dirs.cleanup();
});

const pricingFor = (database: Db) =>
  createPricing({
    ...(database === db ? stores : createStores(database, dirs.settings)),
    settings: dirs.settings,
    env: {},
  });
const totalChanges = (database: Db) => database.sqlite.query<{ n: number }, []>("SELECT total_changes() AS n").get()!.n;
const rows = (database: Db) =>
  database.sqlite
    .query<{ id: string; version: number; name: string; source: string; requirements: string }, []>(
      "SELECT id, version, name, source, requirements FROM payment_instructions ORDER BY source",
    )
    .all();
const mappings = (database: Db) =>
  database.sqlite
    .query<{ cid: string; instruction_id: string }, []>("SELECT cid, instruction_id FROM cid_mappings ORDER BY cid")
    .all();

describe("reconciling pricing files into the database", () => {
  test("creates instructions with their CIDs, readable by the gateway's query", () => {
    dirs.write(
      "a.yaml",
      pricingFile(instruction("one", { cids: [CID_A, CID_B] }), instruction("two", { price: "$2", cids: [CID_C] })),
    );
    const report = pricingFor(db).reload("start");
    expect(report).toMatchObject({ result: "applied", instructions: 2, cids: 3, errors: [] });
    expect(report.changes.created.map((c) => c.source)).toEqual(["file:a.yaml#one", "file:a.yaml#two"]);
    expect(report.changes.cidsAttached).toBe(3);
    const one = stores.instructions.forCid(CID_B)!;
    expect(one).toMatchObject({ name: "one", version: 1, source: "file:a.yaml#one" });
    expect(one.requirements).toEqual([{ network: "base-sepolia", asset: USDC, pay_to: PAY_TO, amount: "10000" }]);
    expect(one.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/); // UUIDv7
    expect(stores.instructions.forCid(CID_C)?.requirements[0].amount).toBe("2000000");
  });

  test("an unchanged reload writes nothing; a change bumps only that instruction's version", () => {
    dirs.write("a.yaml", pricingFile(instruction("one", { cids: [CID_A] }), instruction("two", { cids: [CID_B] })));
    const pricing = pricingFor(db);
    pricing.reload("start");
    const before = rows(db);

    const writes = totalChanges(db);
    expect(pricing.reload("config").result).toBe("unchanged");
    // Rewriting the same content through a fresh loader (no cache) also writes nothing.
    expect(pricingFor(db).reload("config").result).toBe("unchanged");
    expect(totalChanges(db)).toBe(writes);
    expect(rows(db)).toEqual(before);

    dirs.write(
      "a.yaml",
      pricingFile(instruction("one", { cids: [CID_A], price: "$0.02" }), instruction("two", { cids: [CID_B] })),
    );
    const r = pricing.reload("config");
    expect(r.result).toBe("applied");
    expect(r.changes.updated).toEqual([{ id: before[0].id, source: "file:a.yaml#one", name: "one", version: 2 }]);
    const after = rows(db);
    expect(after.map((x) => [x.id, x.version])).toEqual([
      [before[0].id, 2],
      [before[1].id, 1],
    ]);
    expect(JSON.parse(after[0].requirements)[0].amount).toBe("20000");
  });

  test("ids survive reloads, restarts and CID moves; removed instructions go with their CIDs", () => {
    const file = join(dirs.base, "db.sqlite");
    let disk = openDb(file);
    dirs.write("a.yaml", pricingFile(instruction("one", { cids: [CID_A] }), instruction("two", { cids: [CID_B] })));
    pricingFor(disk).reload("start");
    const ids = rows(disk).map((r) => r.id);
    disk.sqlite.close();

    disk = openDb(file); // a restart: new process state, same database
    dirs.write("a.yaml", pricingFile(instruction("one", { cids: [CID_B] }), instruction("two", { cids: [CID_A] })));
    const moved = pricingFor(disk).reload("start");
    expect(moved.result).toBe("applied");
    expect(moved.changes).toMatchObject({ created: [], updated: [], deleted: [], cidsAttached: 2, cidsDetached: 2 });
    expect(rows(disk).map((r) => r.id)).toEqual(ids);
    expect(mappings(disk)).toEqual([
      { cid: CID_A, instruction_id: ids[1] },
      { cid: CID_B, instruction_id: ids[0] },
    ]);

    dirs.write("a.yaml", pricingFile(instruction("one", { cids: [CID_B] })));
    const removed = pricingFor(disk).reload("config");
    expect(removed.changes.deleted.map((d) => d.id)).toEqual([ids[1]]);
    expect(rows(disk).map((r) => r.id)).toEqual([ids[0]]);
    expect(mappings(disk)).toEqual([{ cid: CID_B, instruction_id: ids[0] }]);

    // A missing folder (a typo in CIDGATE_CONFIG_DIR, an unmounted volume) deletes nothing...
    rmSync(dirs.configDir, { recursive: true });
    const missing = pricingFor(disk).reload("config");
    expect(missing.result).toBe("rejected");
    expect(missing.errors[0].rule).toBe("config-dir");
    expect(rows(disk).map((r) => r.id)).toEqual([ids[0]]);
    // ...while an empty folder says "no instructions".
    mkdirSync(dirs.configDir);
    expect(pricingFor(disk).reload("config").changes.deleted).toHaveLength(1);
    expect(rows(disk)).toEqual([]);
    expect(mappings(disk)).toEqual([]);
    disk.sqlite.close();
  });

  test("a bad file applies nothing and the last good state keeps serving", () => {
    dirs.write("a.yaml", pricingFile(instruction("one", { cids: [CID_A] })));
    const pricing = pricingFor(db);
    pricing.reload("start");
    const good = rows(db);
    const writes = totalChanges(db);

    // One good change and one bad file together: neither is applied.
    dirs.write("a.yaml", pricingFile(instruction("one", { cids: [CID_A], price: "$9" })));
    dirs.write("b.yaml", pricingFile(instruction("broken", { price: "$0.0000001" })));
    const r = pricing.reload("config");
    expect(r.result).toBe("rejected");
    expect(r.errors).toHaveLength(1);
    expect(totalChanges(db)).toBe(writes);
    expect(rows(db)).toEqual(good);
    expect(stores.instructions.forCid(CID_A)?.requirements[0].amount).toBe("10000");
    expect(pricing.status().lastGood?.trigger).toBe("start");
    expect(pricing.status().lastReload).toBe(r);
  });

  test("API-made instructions are never touched; a CID they hold rejects the reload naming both", () => {
    const api = stores.instructions.create({
      name: "by hand",
      requirements: [
        { network: "base", asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", pay_to: PAY_TO, amount: "5" },
      ],
    });
    stores.instructions.attachCid(api.id, CID_A);

    dirs.write("a.yaml", pricingFile(instruction("mine", { cids: [CID_B] })));
    const pricing = pricingFor(db);
    expect(pricing.reload("start").result).toBe("applied");

    dirs.write("a.yaml", pricingFile(instruction("mine", { cids: [CID_B, CID_A] })));
    const r = pricing.reload("config");
    expect(r.result).toBe("rejected");
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toMatchObject({ rule: "duplicate-cid", line: 11 });
    expect(r.errors[0].file).toEndWith("config/a.yaml");
    expect(r.errors[0].message).toContain(api.id);
    expect(r.errors[0].message).toContain('"mine"');
    expect(stores.instructions.forCid(CID_A)?.id).toBe(api.id);
    expect(stores.instructions.forCid(CID_B)?.source).toBe("file:a.yaml#mine");

    rmSync(join(dirs.configDir, "a.yaml"));
    pricing.reload("config");
    expect(rows(db).map((x) => x.source)).toEqual(["api"]);
    expect(stores.instructions.forCid(CID_A)?.id).toBe(api.id);
  });
});
