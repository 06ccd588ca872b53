/**
 * Slow editors' saves (issue 10, item 8), through the production server and
 * real filesystem events with CONFIG_SETTLE_MS at its default: a pricing file
 * is saved again and again by truncating it (or moving it aside) and writing
 * it after a pause of 300 to 1,200 ms, while a client asks for its CIDs
 * without pause. A save is wrong when any instruction id changed across it,
 * or any request during it got a 404.
 */
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cidOfBytes } from "../../src/content/cid";
import { createLogger } from "../../src/http/logging";
import { startServer } from "../../src/server";
import { loadSettings } from "../../src/settings";
import type { ChaosCase } from "../case";
import { seededRandom } from "../lib/stack";

const SAVES = Number(process.env.CHAOS_SAVES ?? 10);
const PAY_TO = "0x1111111111111111111111111111111111111111";

const pricing = (price: string) =>
  [
    "defaults:",
    "  network: base-sepolia",
    `  pay_to: "${PAY_TO}"`,
    "instructions:",
    "  docs:",
    "    name: docs",
    "    payment_requirements:",
    `      - price: "${price}"`,
    "    files:",
    '      - "docs/*.md"',
    "  notes:",
    "    name: notes",
    "    payment_requirements:",
    `      - price: "${price}"`,
    "    files:",
    '      - "notes/*.md"',
    "",
  ].join("\n");

const saves: ChaosCase = async () => {
  const rand = seededRandom();
  const base = mkdtempSync(join(tmpdir(), "cidgate-chaos-saves-"));
  const configDir = join(base, "config");
  const contentDir = join(base, "content");
  for (const d of [configDir, join(contentDir, "docs"), join(contentDir, "notes")]) mkdirSync(d, { recursive: true });
  writeFileSync(join(contentDir, "docs/a.md"), "# a\n");
  writeFileSync(join(contentDir, "notes/b.md"), "# b\n");
  const file = join(configDir, "prices.yaml");
  writeFileSync(file, pricing("$0.01"));
  const cids = await Promise.all(
    ["# a\n", "# b\n"].map(async (t) => (await cidOfBytes(new TextEncoder().encode(t))).toString()),
  );

  const server = await startServer({
    settings: loadSettings({
      CIDGATE_DB: ":memory:",
      CIDGATE_CONFIG_DIR: configDir,
      CIDGATE_CONTENT_DIR: contentDir,
      HOST: "127.0.0.1",
      PORT: "0",
    }),
    log: createLogger("silent"),
    jwtSecret: "chaos-saves-secret-chaos-saves-secret-01",
    facilitator: {
      verify: () => Promise.reject(new Error("unused")),
      settle: () => Promise.reject(new Error("unused")),
      supported: () => Promise.reject(new Error("unused")),
    },
  });
  const ids = async () =>
    (await Promise.all(cids.map(async (c) => (await server.stores.instructions.forCid(c))?.id ?? "none"))).join(",");
  try {
    let wrong = 0;
    let notFound = 0;
    let requests = 0;
    const original = await ids();
    for (let s = 0; s < SAVES; s++) {
      const price = `$0.0${2 + (s % 8)}`;
      let saving = true;
      let seen404 = 0;
      const hammer = (async () => {
        while (saving) {
          const res = await fetch(`${server.url}/x402/cid/${rand.pick(cids)}`);
          await res.arrayBuffer();
          requests++;
          if (res.status === 404) seen404++;
        }
      })();
      if (s % 2 === 0) writeFileSync(file, "");
      else renameSync(file, `${file}~`);
      await Bun.sleep(rand.pick([300, 500, 800, 1200]));
      writeFileSync(file, pricing(price));
      const amount = String(Number(price.slice(1)) * 1_000_000);
      for (
        let t = 0;
        t < 300 && (await server.stores.instructions.forCid(cids[0]))?.requirements[0].amount !== amount;
        t++
      )
        await Bun.sleep(20);
      saving = false;
      await hammer;
      rmSync(`${file}~`, { force: true });
      notFound += seen404;
      if (seen404 > 0 || (await ids()) !== original) wrong++;
    }
    const kept = (await ids()) === original;
    return [
      {
        case: "slow editor saves",
        tried: SAVES,
        wrong,
        note: `${requests} requests during the saves, ${notFound} 404s; ids ${kept ? "kept" : "CHANGED"}`,
      },
    ];
  } finally {
    await server.stop(true);
    rmSync(base, { recursive: true, force: true });
  }
};

export default saves;
