/**
 * Pricing files reconciled into the database, on both engines: what the
 * gateway then reads, what an unchanged reload writes (nothing: not a row,
 * and on PostgreSQL not a move of catalog_generation), ids kept across
 * restarts, and the refusals that leave every row as it was.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createPricing } from "../../src/pricing/service";
import { closeEngineStores, type EngineStores, engineStores, enginesHere } from "../instructions/engines";
import { CID_A, CID_B, CID_C, instruction, PAY_TO, pricingFile, tempDirs, USDC } from "./helpers";

const engines = await enginesHere("pricing reconcile");
afterEach(closeEngineStores);

describe.each(engines)("%s: reconciling pricing files into the database", (engine) => {
  let dirs: ReturnType<typeof tempDirs>;
  let db: EngineStores;
  beforeEach(async () => {
    dirs = tempDirs();
    db = await engineStores(engine, dirs.settings);
  });
  afterEach(() => dirs.cleanup());

  const pricingFor = (database: EngineStores) =>
    createPricing({ ...database.stores, settings: dirs.settings, env: {} });

  test("creates instructions with their CIDs, readable by the gateway's query", async () => {
    dirs.write(
      "a.yaml",
      pricingFile(instruction("one", { cids: [CID_A, CID_B] }), instruction("two", { price: "$2", cids: [CID_C] })),
    );
    const report = await pricingFor(db).reload("start");
    expect(report).toMatchObject({ result: "applied", instructions: 2, cids: 3, errors: [] });
    expect(report.changes.created.map((c) => c.source)).toEqual(["file:a.yaml#one", "file:a.yaml#two"]);
    expect(report.changes.cidsAttached).toBe(3);
    const one = (await db.stores.instructions.forCid(CID_B))!;
    expect(one).toMatchObject({ name: "one", version: 1, source: "file:a.yaml#one" });
    expect(one.requirements).toEqual([{ network: "base-sepolia", asset: USDC, pay_to: PAY_TO, amount: "10000" }]);
    expect(one.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/); // UUIDv7
    expect((await db.stores.instructions.forCid(CID_C))?.requirements[0].amount).toBe("2000000");
  });

  test("an unchanged reload writes nothing; a change bumps only that instruction's version", async () => {
    dirs.write("a.yaml", pricingFile(instruction("one", { cids: [CID_A] }), instruction("two", { cids: [CID_B] })));
    const pricing = pricingFor(db);
    await pricing.reload("start");
    const before = await db.rows();

    const writes = await db.writeMark();
    expect((await pricing.reload("config")).result).toBe("unchanged");
    // Rewriting the same content through a fresh loader (no cache) also writes nothing.
    expect((await pricingFor(db).reload("config")).result).toBe("unchanged");
    expect(await db.writeMark()).toBe(writes);
    expect(await db.rows()).toEqual(before);

    dirs.write(
      "a.yaml",
      pricingFile(instruction("one", { cids: [CID_A], price: "$0.02" }), instruction("two", { cids: [CID_B] })),
    );
    const r = await pricing.reload("config");
    expect(r.result).toBe("applied");
    expect(r.changes.updated).toEqual([{ id: before[0].id, source: "file:a.yaml#one", name: "one", version: 2 }]);
    const after = await db.rows();
    expect(after.map((x) => [x.id, x.version])).toEqual([
      [before[0].id, 2],
      [before[1].id, 1],
    ]);
    expect(JSON.parse(after[0].requirements)[0].amount).toBe("20000");
  });

  test("ids survive reloads, restarts and CID moves; removed instructions go with their CIDs", async () => {
    let disk = await engineStores(
      engine,
      dirs.settings,
      engine === "sqlite" ? join(dirs.base, "db.sqlite") : undefined,
    );
    dirs.write("a.yaml", pricingFile(instruction("one", { cids: [CID_A] }), instruction("two", { cids: [CID_B] })));
    await pricingFor(disk).reload("start");
    const ids = (await disk.rows()).map((r) => r.id);
    await disk.close();

    disk = await engineStores(engine, dirs.settings, disk.location); // a restart: new process state, same database
    dirs.write("a.yaml", pricingFile(instruction("one", { cids: [CID_B] }), instruction("two", { cids: [CID_A] })));
    const moved = await pricingFor(disk).reload("start");
    expect(moved.result).toBe("applied");
    expect(moved.changes).toMatchObject({ created: [], updated: [], deleted: [], cidsAttached: 2, cidsDetached: 2 });
    expect((await disk.rows()).map((r) => r.id)).toEqual(ids);
    expect(await disk.mappings()).toEqual([
      { cid: CID_A, instruction_id: ids[1] },
      { cid: CID_B, instruction_id: ids[0] },
    ]);

    dirs.write("a.yaml", pricingFile(instruction("one", { cids: [CID_B] })));
    const removed = await pricingFor(disk).reload("config");
    expect(removed.changes.deleted.map((d) => d.id)).toEqual([ids[1]]);
    expect((await disk.rows()).map((r) => r.id)).toEqual([ids[0]]);
    expect(await disk.mappings()).toEqual([{ cid: CID_B, instruction_id: ids[0] }]);

    // A missing folder (a typo in CIDGATE_CONFIG_DIR, an unmounted volume) deletes nothing...
    rmSync(dirs.configDir, { recursive: true });
    const missing = await pricingFor(disk).reload("config");
    expect(missing.result).toBe("rejected");
    expect(missing.errors[0].rule).toBe("config-dir");
    expect((await disk.rows()).map((r) => r.id)).toEqual([ids[0]]);
    // ...while an empty folder says "no instructions".
    mkdirSync(dirs.configDir);
    expect((await pricingFor(disk).reload("config")).changes.deleted).toHaveLength(1);
    expect(await disk.rows()).toEqual([]);
    expect(await disk.mappings()).toEqual([]);
    await disk.close();
  });

  test("a bad file applies nothing and the last good state keeps serving", async () => {
    dirs.write("a.yaml", pricingFile(instruction("one", { cids: [CID_A] })));
    const pricing = pricingFor(db);
    await pricing.reload("start");
    const good = await db.rows();
    const writes = await db.writeMark();

    // One good change and one bad file together: neither is applied.
    dirs.write("a.yaml", pricingFile(instruction("one", { cids: [CID_A], price: "$9" })));
    dirs.write("b.yaml", pricingFile(instruction("broken", { price: "$0.0000001" })));
    const r = await pricing.reload("config");
    expect(r.result).toBe("rejected");
    expect(r.errors).toHaveLength(1);
    expect(await db.writeMark()).toBe(writes);
    expect(await db.rows()).toEqual(good);
    expect((await db.stores.instructions.forCid(CID_A))?.requirements[0].amount).toBe("10000");
    expect(pricing.status().lastGood?.trigger).toBe("start");
    expect(pricing.status().lastReload).toBe(r);
  });

  test("API-made instructions are never touched; a CID they hold rejects the reload naming both", async () => {
    const { instructions } = db.stores;
    const api = await instructions.create({
      name: "by hand",
      requirements: [
        { network: "base", asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", pay_to: PAY_TO, amount: "5" },
      ],
    });
    await instructions.attachCid(api.id, CID_A);

    dirs.write("a.yaml", pricingFile(instruction("mine", { cids: [CID_B] })));
    const pricing = pricingFor(db);
    expect((await pricing.reload("start")).result).toBe("applied");

    dirs.write("a.yaml", pricingFile(instruction("mine", { cids: [CID_B, CID_A] })));
    const writes = await db.writeMark();
    const r = await pricing.reload("config");
    expect(r.result).toBe("rejected");
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toMatchObject({ rule: "duplicate-cid", line: 11 });
    expect(r.errors[0].file).toEndWith("config/a.yaml");
    expect(r.errors[0].message).toContain(api.id);
    expect(r.errors[0].message).toContain('"mine"');
    expect(await db.writeMark()).toBe(writes);
    expect((await instructions.forCid(CID_A))?.id).toBe(api.id);
    expect((await instructions.forCid(CID_B))?.source).toBe("file:a.yaml#mine");

    rmSync(join(dirs.configDir, "a.yaml"));
    await pricing.reload("config");
    expect((await db.rows()).map((x) => x.source)).toEqual(["api"]);
    expect((await instructions.forCid(CID_A))?.id).toBe(api.id);
  });
});
