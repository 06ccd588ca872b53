/**
 * What start-up's checks cost (src/startup/preflight.ts), as the ledger grows:
 *
 *   bun run bench:startup        (or: taskset -c 0 npx bun bench/startup.ts; ROWS=n, RUNS=n)
 *
 * - the shop opened as a start would (content indexed, pricing reconciled into a
 *   scratch database), for the example config/ and content/;
 * - PRAGMA quick_check (start-up's) and PRAGMA integrity_check (`cidgate doctor`'s)
 *   on a ledger of ROWS settled payments (default 100,000), with a full scan
 *   (`SELECT sum(length(nonce))`) as the baseline the ratios are taken against,
 *   so a loaded machine shows in all three alike.
 * The rows are inserted with one SQL statement per row in one transaction (bench
 * set-up only; the app writes payments through the ledger store).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openShop } from "../src/catalog/open";
import { openDb } from "../src/db/client";
import { loadSettings } from "../src/settings";

const ROWS = Number(process.env.ROWS ?? 100_000);
const RUNS = Number(process.env.RUNS ?? 5);
const ROOT = join(import.meta.dir, "..");

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
async function time(fn: () => unknown | Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

const dir = mkdtempSync(join(tmpdir(), "cidgate-bench-startup-"));
try {
  const settings = loadSettings({
    CIDGATE_DB: join(dir, "cidgate.db"),
    CIDGATE_CONFIG_DIR: join(ROOT, "config"),
    CIDGATE_CONTENT_DIR: join(ROOT, "content"),
    JWT_SECRET: "bench-startup-secret-bench-startup-secret",
  });
  const env = { ...process.env, PAY_TO: "0x6135561038E7C676473431842e586C8248276AED" };

  const open: number[] = [];
  for (let i = 0; i < RUNS; i++) open.push(await time(async () => (await openShop(settings, env)).close()));

  const db = openDb(settings.db);
  const insert = db.sqlite.prepare(
    `INSERT INTO payments (network, asset, payer, nonce, cid, instruction_id, instruction_version, amount, pay_to,
       state, tx_hash, valid_before, x402_version, proof_hash, error, created_at, updated_at)
     VALUES ('base-sepolia', '0x036CbD53842c5426634e7929541eC2318f3dCF7e', ?, ?, 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e',
       '0190a000-0000-7000-8000-000000000001', 1, '10000', '0x6135561038E7C676473431842e586C8248276AED',
       'settled', ?, 4000000000, 1, ?, NULL, ?, ?)`,
  );
  db.sqlite.transaction(() => {
    for (let i = 0; i < ROWS; i++) {
      const hex = i.toString(16).padStart(64, "0");
      const at = new Date(1_790_000_000_000 + i * 1000).toISOString();
      insert.run(`0x${hex.slice(24)}`, `0x${hex}`, `0x${hex}`, hex, at, at);
    }
  })();
  db.sqlite.exec("PRAGMA wal_checkpoint(TRUNCATE)");

  const scan: number[] = [];
  const quick: number[] = [];
  const full: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    scan.push(await time(() => db.sqlite.query("SELECT sum(length(nonce)) FROM payments").get()));
    quick.push(await time(() => db.sqlite.query("PRAGMA quick_check").all()));
    full.push(await time(() => db.sqlite.query("PRAGMA integrity_check").all()));
  }
  const size = (
    db.sqlite.query("SELECT page_count * page_size AS b FROM pragma_page_count, pragma_page_size").get() as {
      b: number;
    }
  ).b;
  db.sqlite.close();

  const ms = (x: number) => `${x.toFixed(1)} ms`;
  console.log(`open the shop (example config/ and content/), median of ${RUNS}: ${ms(median(open))}`);
  console.log(`ledger: ${ROWS} payments, ${(size / 1024 / 1024).toFixed(1)} MiB`);
  console.log(`  full scan (baseline)   ${ms(median(scan))}`);
  console.log(
    `  PRAGMA quick_check     ${ms(median(quick))}  (${(median(quick) / median(scan)).toFixed(1)}x the scan)`,
  );
  console.log(`  PRAGMA integrity_check ${ms(median(full))}  (${(median(full) / median(scan)).toFixed(1)}x the scan)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
