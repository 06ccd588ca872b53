/**
 * Editors' saves (issue 10, item 8), through the production server and real
 * filesystem events: a truncate-then-write with a pause well over the old
 * 250 ms grace keeps every instruction id and its payment history, and the
 * file's CIDs keep answering 402 (no 404 burst) while the file is empty. A
 * file left empty past CONFIG_SETTLE_MS is a real removal and applies.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { cidOfBytes } from "../../src/content/cid";
import { createLogger } from "../../src/http/logging";
import { type RunningServer, startServer } from "../../src/server";
import { eventually } from "../support/eventually";
import { CID_A as CID, instruction, pricingFile, tempDirs } from "./helpers";

const TEXT = "# sold\n";
let dirs: ReturnType<typeof tempDirs>;
let server: RunningServer;
let cid: string;

const unusedFacilitator = {
  verify: () => Promise.reject(new Error("unused")),
  settle: () => Promise.reject(new Error("unused")),
  supported: () => Promise.reject(new Error("unused")),
};

beforeAll(async () => {
  dirs = tempDirs();
  dirs.write("doc.md", TEXT, dirs.contentDir);
  dirs.write("a.yaml", pricingFile(instruction("docs", { files: ["*.md"] })));
  cid = (await cidOfBytes(new TextEncoder().encode(TEXT))).toString();
  server = await startServer({
    settings: { ...dirs.settings, port: 0, host: "127.0.0.1", publicUrl: "http://127.0.0.1:0" },
    log: createLogger("silent"),
    jwtSecret: "slow-save-secret-slow-save-secret-0123456",
    facilitator: unusedFacilitator,
  });
});
afterAll(async () => {
  await server?.stop(true);
  dirs.cleanup();
});

const idOf = async () => (await server.stores.instructions.forCid(cid))?.id;

/** GETs the CID until stopped; counts the answers by status. */
function hammer() {
  const statuses = new Map<number, number>();
  let running = true;
  const done = (async () => {
    while (running) {
      const res = await fetch(`${server.url}/x402/cid/${cid}`);
      await res.arrayBuffer();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    }
  })();
  return {
    async stop() {
      running = false;
      await done;
      return statuses;
    },
  };
}

test("truncate, wait 600 ms, write: same instruction id, the new price, and 402 throughout (never 404)", async () => {
  const id = await idOf();
  expect(id).toBeDefined();
  const h = hammer();
  const file = join(dirs.configDir, "a.yaml");
  writeFileSync(file, "");
  await Bun.sleep(600);
  writeFileSync(file, pricingFile(instruction("docs", { files: ["*.md"], price: "$0.02" })));
  await eventually(async () => (await server.stores.instructions.forCid(cid))?.requirements[0].amount === "20000");
  const statuses = await h.stop();
  expect(await idOf()).toBe(id);
  expect(statuses.get(404) ?? 0).toBe(0);
  expect(statuses.get(402) ?? 0).toBeGreaterThan(0);
});

test("a file left empty past CONFIG_SETTLE_MS is a removal: its instructions go", async () => {
  expect(await idOf()).toBeDefined();
  writeFileSync(join(dirs.configDir, "a.yaml"), "");
  await eventually(async () => (await idOf()) === undefined);
  expect((await fetch(`${server.url}/x402/cid/${cid}`)).status).toBe(404);
});

test("a save that leaves a file unparsable for a moment is refused quietly (info), removes nothing, and the ids stay", async () => {
  const { openDb } = await import("../../src/db/client");
  const { createStores } = await import("../../src/stores");
  const { createPricing } = await import("../../src/pricing/service");
  const local = tempDirs();
  const db = openDb(":memory:");
  try {
    const stores = createStores(db, local.settings);
    const lines: { level: number; msg: string }[] = [];
    const log = createLogger("info", {
      write: (t: string) =>
        lines.push(
          ...t
            .trim()
            .split("\n")
            .map((l) => JSON.parse(l)),
        ),
    });
    const pricing = createPricing({ ...stores, settings: local.settings, env: {}, log, settleMs: 2000 });
    local.write("a.yaml", pricingFile(instruction("one", { cids: [CID] })));
    expect((await pricing.reload("start")).result).toBe("applied");
    const id = stores.instructions.forCid(CID)?.id; // SQLite stores: synchronous
    local.write("a.yaml", "instructions:\n  one:\n    name: [half written");
    const from = lines.length;
    expect((await pricing.reload("config")).result).toBe("rejected");
    expect(lines.slice(from).map((l) => [l.level, l.msg])).toEqual([
      [30, "pricing file does not parse yet: taken as being saved; the last good state keeps serving"],
    ]);
    local.write("a.yaml", pricingFile(instruction("one", { cids: [CID], price: "$0.03" })));
    expect((await pricing.reload("config")).result).toBe("applied");
    expect(stores.instructions.forCid(CID)?.id).toBe(id);
  } finally {
    db.sqlite.close();
    local.cleanup();
  }
});
