import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { type Db, openDb } from "../../src/db/client";
import { createPricing } from "../../src/pricing/service";
import { createStores } from "../../src/stores";
import { makeApp } from "./app";
import { CID_A, instruction, pricingFile, tempDirs } from "./helpers";

let dirs: ReturnType<typeof tempDirs>;
let db: Db;
beforeEach(() => {
  dirs = tempDirs();
  db = openDb(":memory:");
});
afterEach(() => {
  db.sqlite.close();
  dirs.cleanup();
});

describe("GET /v3/x402/config", () => {
  test("needs a token with read scope", async () => {
    const { app, write } = await makeApp({ settings: dirs.settings, db });
    expect((await app.handle(new Request("http://localhost/v3/x402/config"))).status).toBe(401);
    const res = await app.handle(
      new Request("http://localhost/v3/x402/config", { headers: { authorization: `Bearer ${write}` } }),
    );
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ error: { code: "forbidden" } });
  });

  test("shows the last reload: time, result, changes and every error with its position", async () => {
    const stores = createStores(db, dirs.settings);
    const pricing = createPricing({ ...stores, settings: dirs.settings, env: {} });
    const { app, read, write } = await makeApp({ settings: dirs.settings, db, stores, pricing });
    const get = async () =>
      (await (
        await app.handle(
          new Request("http://localhost/v3/x402/config", { headers: { authorization: `Bearer ${read}` } }),
        )
      ).json()) as {
        data: Record<string, any>;
      };

    expect((await get()).data).toMatchObject({ config_dir: dirs.configDir, last_reload: null, serving: null });

    dirs.write("a.yaml", pricingFile(instruction("one", { cids: [CID_A] })));
    await pricing.reload("start");
    const first = (await get()).data;
    expect(first.last_reload).toMatchObject({
      trigger: "start",
      result: "applied",
      files: ["a.yaml"],
      instructions: 1,
      cids: 1,
      changes: {
        created: [{ source: "file:a.yaml#one", name: "one", version: 1 }],
        updated: [],
        deleted: [],
        cids_attached: 1,
      },
      errors: [],
    });
    expect(Date.parse(first.last_reload.at)).toBeGreaterThan(Date.now() - 60_000);
    expect(first.serving).toMatchObject({ at: first.last_reload.at, instructions: 1 });

    dirs.write(
      "a.yaml",
      pricingFile(instruction("one", { cids: [CID_A], price: "$0.0000001" }), instruction("two", { cids: ["nope"] })),
    );
    // Reload on demand (write scope) answers the same report, 422 when rejected.
    const reloadRes = await app.handle(
      new Request("http://localhost/v3/x402/config/reload", {
        method: "POST",
        headers: { authorization: `Bearer ${write}` },
      }),
    );
    expect(reloadRes.status).toBe(422);
    const after = (await get()).data;
    expect(after.last_reload.result).toBe("rejected");
    expect(after.last_reload.errors).toEqual([
      expect.objectContaining({ file: `${dirs.configDir}/a.yaml`, line: 8, column: 16, rule: "price" }),
      expect.objectContaining({ file: `${dirs.configDir}/a.yaml`, line: 16, column: 9, rule: "cid" }),
    ]);
    // Still serving the state of the first reload.
    expect(after.serving.at).toBe(first.last_reload.at);
  });
});
