/**
 * Pricing reconcile at scale: 10,000 instructions in 10 files.
 *
 *   bun run bench:config            (or: taskset -c 0 bun bench/config.ts)
 *
 * Measures, on a SQLite file in WAL mode as the server uses it:
 * - cold: first reload into an empty database (parse + validate + insert all);
 * - restart: a new process's first reload with nothing changed (parse all, write nothing);
 * - one change: one instruction's price edited in one file (re-parse that file, update one row);
 * - no change: a reload with nothing changed, which must write nothing (total_changes() unmoved).
 * Targets (issue 5): cold < 2 s, one change < 200 ms.
 * Also: the cost of the content store's lookup (cid -> file), which the gateway calls on every cache miss,
 * and how fast the indexer hashes a new 100 MiB file (once per change, never per request).
 */

import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CID } from "multiformats/cid";
import * as raw from "multiformats/codecs/raw";
import { sha256 } from "multiformats/hashes/sha2";
import { cidOfFile } from "../src/content/cid";
import { createContentStore } from "../src/content/store";
import { createCatalogChanges } from "../src/db/changes";
import { openDb } from "../src/db/client";
import { createPricing } from "../src/pricing/service";
import { loadSettings } from "../src/settings";
import { createStores } from "../src/stores";

const FILES = 10;
const PER_FILE = 1000;
const RUNS = Number(process.env.RUNS ?? 5);
const PAY_TO = "0x1111111111111111111111111111111111111111";

async function cidFor(n: number): Promise<string> {
  return CID.createV1(raw.code, await sha256.digest(new TextEncoder().encode(`item ${n}`))).toString();
}

function fileText(f: number, cids: string[], priceOf: (n: number) => string): string {
  const out = [`defaults:`, `  network: base-sepolia`, `  pay_to: "${PAY_TO}"`, `instructions:`];
  for (let i = 0; i < PER_FILE; i++) {
    const n = f * PER_FILE + i;
    out.push(
      `  item-${n}:`,
      `    name: Item ${n}`,
      `    description: Example item number ${n}`,
      `    payment_requirements:`,
      `      - price: "${priceOf(n)}"`,
      `    cids: [${cids[n]}]`,
    );
  }
  return `${out.join("\n")}\n`;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (x: number) => `${x.toFixed(1)} ms`;

const cids = await Promise.all(Array.from({ length: FILES * PER_FILE }, (_, n) => cidFor(n)));
const results: Record<string, number[]> = { cold: [], restart: [], oneChange: [], noChange: [] };
let noChangeWrites = 0;

for (let run = 0; run < RUNS; run++) {
  const base = mkdtempSync(join(tmpdir(), "cidgate-bench-config-"));
  const configDir = join(base, "config");
  mkdirSync(configDir);
  const price = (n: number) => `$0.${String(10 + (n % 80)).padStart(2, "0")}`;
  for (let f = 0; f < FILES; f++) writeFileSync(join(configDir, `prices-${f}.yaml`), fileText(f, cids, price));
  const settings = { ...loadSettings({}), configDir, contentDir: join(base, "content"), db: join(base, "db.sqlite") };
  let db = openDb(settings.db);

  let pricing = createPricing({ ...createStores(db, settings), settings, env: {} });
  let t = performance.now();
  let r = await pricing.reload("start");
  results.cold.push(performance.now() - t);
  if (r.result !== "applied" || r.changes.created.length !== FILES * PER_FILE)
    throw new Error(`cold: ${r.result} ${r.errors[0]?.message}`);

  db.sqlite.close();
  db = openDb(settings.db);
  pricing = createPricing({ ...createStores(db, settings), settings, env: {} });
  t = performance.now();
  r = await pricing.reload("start");
  results.restart.push(performance.now() - t);
  if (r.result !== "unchanged") throw new Error(`restart: ${r.result}`);

  writeFileSync(
    join(configDir, "prices-3.yaml"),
    fileText(3, cids, (n) => (n === 3500 ? "$9.99" : price(n))),
  );
  t = performance.now();
  r = await pricing.reload("config");
  results.oneChange.push(performance.now() - t);
  if (r.changes.updated.length !== 1 || r.changes.created.length + r.changes.deleted.length !== 0)
    throw new Error("one change: wrong diff");

  const writes = db.sqlite.query<{ n: number }, []>("SELECT total_changes() AS n").get()!.n;
  t = performance.now();
  r = await pricing.reload("config");
  results.noChange.push(performance.now() - t);
  noChangeWrites += db.sqlite.query<{ n: number }, []>("SELECT total_changes() AS n").get()!.n - writes;
  if (r.result !== "unchanged") throw new Error(`no change: ${r.result}`);

  db.sqlite.close();
  rmSync(base, { recursive: true, force: true });
}

console.log(`pricing reconcile, ${FILES * PER_FILE} instructions in ${FILES} files, ${RUNS} runs (median, min..max):`);
for (const [name, xs] of Object.entries(results)) {
  console.log(
    `  ${name.padEnd(10)} ${ms(median(xs)).padStart(10)}   (${ms(Math.min(...xs))} .. ${ms(Math.max(...xs))})`,
  );
}
console.log(`  rows written by no-change reloads: ${noChangeWrites}`);

// The content store's lookup over an index of 10,000 files: hits, then misses.
{
  const db = openDb(":memory:");
  const insert = db.sqlite.query(
    "INSERT INTO content_files (path, cid, size, mtime_ms, media_type) VALUES (?, ?, ?, ?, ?)",
  );
  db.sqlite.transaction(() => {
    for (const [n, cid] of cids.entries()) insert.run(`files/${n}.md`, cid, 1000, 0, "text/markdown");
  })();
  const content = createContentStore(db, { contentDir: "content" }, createCatalogChanges());
  const N = 200_000;
  let found = 0;
  let t = performance.now();
  for (let i = 0; i < N; i++) if (content.lookup(cids[i % cids.length])) found++;
  const hit = ((performance.now() - t) * 1000) / N;
  t = performance.now();
  for (let i = 0; i < N; i++) if (content.lookup(`bafkreiaaaa${i}`)) found++;
  const miss = ((performance.now() - t) * 1000) / N;
  if (found !== N) throw new Error("lookup missed");
  console.log(
    `content lookup over 10,000 indexed files: ${hit.toFixed(2)} µs per hit, ${miss.toFixed(2)} µs per miss (invalid CID text)`,
  );
  db.sqlite.close();
}

// Hashing a new file, as the indexer does: 100 MiB of random bytes.
{
  const dir = mkdtempSync(join(tmpdir(), "cidgate-bench-hash-"));
  const file = join(dir, "big.bin");
  const chunk = randomBytes(1 << 20);
  writeFileSync(file, Buffer.concat(Array.from({ length: 100 }, () => chunk)));
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    await cidOfFile(file);
    times.push(performance.now() - t);
  }
  rmSync(dir, { recursive: true, force: true });
  const best = Math.min(...times);
  console.log(
    `hashing a 100 MiB file (CID as ipfs add --cid-version=1): ${ms(median(times))} median, ${(100 / (best / 1000)).toFixed(0)} MiB/s best`,
  );
}
