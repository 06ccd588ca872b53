/**
 * Hot reload latency: how long from a save to the new state being served,
 * through the real watchers (startWatchers, as the server runs them). These
 * are the figures the tests used to assert ("within 1 s"); the tests now only
 * wait for the change (test/support/eventually.ts), and this measures it.
 *
 *   bun bench/watch.ts            (RUNS=20 by default)
 *
 * Measures, RUNS times each, median and max:
 * - pricing, atomic save (temp file renamed over a.yaml) -> new price served;
 * - pricing, in-place save -> new price served;
 * - content, a new file -> indexed and priced through a `files:` glob;
 * - content, a file removed -> unpriced.
 */
import { renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cidOfBytes } from "../src/content/cid";
import { openDb } from "../src/db/client";
import { createPricing } from "../src/pricing/service";
import { startWatchers } from "../src/pricing/watch";
import { createStores } from "../src/stores";
import { CID_A, instruction, pricingFile, tempDirs } from "../test/pricing/helpers";

const RUNS = Number(process.env.RUNS ?? 20);
const LIMIT_MS = 30_000;

async function timeUntil(check: () => boolean): Promise<number> {
  const start = performance.now();
  while (!check()) {
    if (performance.now() - start > LIMIT_MS) throw new Error("not served within 30 s");
    await Bun.sleep(1);
  }
  return performance.now() - start;
}

const dirs = tempDirs();
const db = openDb(":memory:");
const file = (price: string) =>
  pricingFile(instruction("one", { cids: [CID_A], price }), instruction("docs", { files: ["docs/*.md"] }));
dirs.write("a.yaml", file("$0.01"));
const stores = createStores(db, dirs.settings);
await stores.content.index();
const pricing = createPricing({ ...stores, settings: dirs.settings, env: {} });
await pricing.reload("start");
const watchers = startWatchers({ content: stores.content, settings: dirs.settings, pricing });
const amountOf = (cid: string) => stores.instructions.forCid(cid)?.requirements[0].amount;

const results: Record<string, number[]> = {
  "pricing atomic save": [],
  "pricing in-place save": [],
  "content file added": [],
  "content file removed": [],
};
try {
  let cents = 1;
  for (let run = 0; run < RUNS; run++) {
    cents++;
    dirs.write(".a.yaml.swp", file(`$0.${String(cents).padStart(2, "0")}`));
    renameSync(join(dirs.configDir, ".a.yaml.swp"), join(dirs.configDir, "a.yaml"));
    const a = String(cents * 10_000);
    results["pricing atomic save"].push(await timeUntil(() => amountOf(CID_A) === a));

    cents++;
    writeFileSync(join(dirs.configDir, "a.yaml"), file(`$0.${String(cents).padStart(2, "0")}`));
    const b = String(cents * 10_000);
    results["pricing in-place save"].push(await timeUntil(() => amountOf(CID_A) === b));

    const text = `# fresh ${run}\n`;
    const cid = (await cidOfBytes(new TextEncoder().encode(text))).toString();
    dirs.write(`docs/fresh-${run}.md`, text, dirs.contentDir);
    results["content file added"].push(await timeUntil(() => stores.instructions.forCid(cid) !== undefined));
    rmSync(join(dirs.contentDir, `docs/fresh-${run}.md`));
    results["content file removed"].push(await timeUntil(() => stores.instructions.forCid(cid) === undefined));
  }
} finally {
  await watchers.close();
  db.sqlite.close();
  dirs.cleanup();
}

const fmt = (n: number) => `${n.toFixed(0)} ms`;
for (const [name, times] of Object.entries(results)) {
  const sorted = [...times].sort((x, y) => x - y);
  console.log(
    `${name.padEnd(24)} median ${fmt(sorted[Math.floor(sorted.length / 2)])}  max ${fmt(sorted[sorted.length - 1])}  (${sorted.length} runs)`,
  );
}
