/**
 * The dashboard's first load from localhost, in Debian's chromium.
 *
 *   bun run bench:dashboard            (PAYMENTS=100000 CIDS=1000 RUNS=7 to change the seed)
 *   POSTGRES=postgres://user@127.0.0.1:5432/cidgate_bench bun run bench:dashboard
 *                                      (on PostgreSQL: an empty database, seeded and left so)
 *
 * A server on a SQLite file (or on POSTGRES's database) seeded with PAYMENTS
 * settled payments over CIDS files and a year of time (rows as the ledger writes
 * them: the rollups' triggers keep the stats as in production), then RUNS fresh browser contexts each open /dashboard signed in
 * (the token already in sessionStorage, as after a log-in) and time from the
 * navigation's start to the moment every view has drawn (the revenue chart holds
 * its data, the tables their rows). Baseline in the same run: /openapi, a
 * one-request page of the same server, loaded the same way. Target (issue 13):
 * under 1 s.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDb } from "../src/db/client";
import { openPg } from "../src/db/pg";
import * as schema from "../src/db/schema-pg";
import { createToken } from "../src/http/auth";
import { createLogger } from "../src/http/logging";
import { startServer } from "../src/server";
import { loadSettings } from "../src/settings";
import { createStores } from "../src/stores";
import { launchBrowser } from "../test/support/browser";

const PAYMENTS = Number(process.env.PAYMENTS ?? 100_000);
const CIDS = Number(process.env.CIDS ?? 1_000);
const RUNS = Number(process.env.RUNS ?? 7);
const POSTGRES = process.env.POSTGRES;
const SECRET = "bench-dashboard-secret-0123456789abcdef";
const USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const PAY_TO = "0x1111111111111111111111111111111111111111";

const dir = mkdtempSync(join(tmpdir(), "cidgate-bench-dashboard-"));
const settings = loadSettings({ CIDGATE_DB: POSTGRES ?? join(dir, "cidgate.db"), HOST: "127.0.0.1", PORT: "0" });
const year = 365 * 86400_000;
/** The i-th payment: settled, spread over the last year, CIDS files, 5,000 payers. */
const payment = (i: number, instructionId: string) => {
  const at = new Date(Date.now() - Math.floor((i / PAYMENTS) * year)).toISOString();
  return {
    network: "base-sepolia",
    asset: USDC,
    payer: `0x${(i % 5000).toString(16).padStart(40, "0")}`,
    nonce: `0x${i.toString(16).padStart(64, "0")}`,
    cid: `bafkreibench${(i % CIDS).toString().padStart(8, "0")}`,
    instructionId,
    instructionVersion: 1,
    amount: String(10_000 + (i % 7) * 1000),
    payTo: PAY_TO,
    state: "settled" as const,
    txHash: `0x${i.toString(16).padStart(64, "0")}`,
    validBefore: 2_000_000_000,
    x402Version: 2,
    proofHash: "x",
    error: null,
    createdAt: at,
    updatedAt: at,
  };
};

// Seed: one instruction, CIDS CIDs, PAYMENTS settled payments spread over the last year.
const seeded = performance.now();
/** SQLite: the database and stores the server is given. PostgreSQL: the server opens CIDGATE_DB itself. */
let sqlite: { db: ReturnType<typeof openDb>; stores: ReturnType<typeof createStores> } | undefined;
if (POSTGRES) {
  // Multi-row INSERTs (the rollups' triggers run on each row), 2,000 rows a statement: PostgreSQL
  // takes at most 65,535 parameters, a payment has 17.
  const pg = await openPg(POSTGRES);
  const [{ n }] = await pg.sql`SELECT count(*)::int AS n FROM payments`;
  if (n > 0) throw new Error("POSTGRES: the bench seeds its own ledger; give it an empty database");
  const now = new Date().toISOString();
  const instructionId = Bun.randomUUIDv7();
  await pg.db.insert(schema.paymentInstructions).values({
    id: instructionId,
    name: "Bench",
    requirements: [{ network: "base-sepolia", asset: USDC, pay_to: PAY_TO, amount: "10000" }],
    createdAt: now,
    updatedAt: now,
  });
  await pg.transaction(async (tx) => {
    for (let first = 0; first < PAYMENTS; first += 2_000)
      await tx
        .insert(schema.payments)
        .values(Array.from({ length: Math.min(2_000, PAYMENTS - first) }, (_, k) => payment(first + k, instructionId)));
  });
  await pg.sql`VACUUM ANALYZE`;
  await pg.close();
} else {
  const db = openDb(settings.db);
  const stores = createStores(db, settings);
  const instruction = stores.instructions.create({
    name: "Bench",
    requirements: [{ network: "base-sepolia", asset: USDC, pay_to: PAY_TO, amount: "10000" }],
  });
  const insert = db.sqlite.prepare(
    `INSERT INTO payments (network, asset, payer, nonce, cid, instruction_id, instruction_version, amount, pay_to, state,
     tx_hash, valid_before, x402_version, proof_hash, error, created_at, updated_at)
   VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, 'settled', ?, 2000000000, 2, 'x', NULL, ?, ?)`,
  );
  db.sqlite.transaction(() => {
    for (let i = 0; i < PAYMENTS; i++) {
      const p = payment(i, instruction.id);
      insert.run(
        p.network,
        p.asset,
        p.payer,
        p.nonce,
        p.cid,
        p.instructionId,
        p.amount,
        p.payTo,
        p.txHash,
        p.createdAt,
        p.createdAt,
      );
    }
  })();
  sqlite = { db, stores };
}
console.log(
  `seeded ${PAYMENTS} payments over ${CIDS} CIDs in ${Math.round(performance.now() - seeded)} ms${POSTGRES ? " (PostgreSQL)" : ""}`,
);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const running = await startServer({
  settings,
  ...sqlite,
  log: createLogger("silent"),
  jwtSecret: SECRET,
  pricing: false,
  facilitator: {
    verify: () => Promise.reject(new Error("unused")),
    settle: () => Promise.reject(new Error("unused")),
    supported: async () => ({ kinds: [] }),
  },
});
const token = await createToken(SECRET, { scopes: ["read", "write"], ttlSeconds: 3600 });
const browser = await launchBrowser();
if (process.env.API_TIMES) {
  for (const path of [
    "/v3/x402/stats?bucket=day",
    "/v3/x402/stats/breakdown?bucket=day&by=cid&sort=revenue&limit=100",
    "/v3/x402/stats/breakdown?bucket=day&by=cid&sort=offers&limit=50",
    "/v3/x402/dashboard/overview",
    "/v3/x402/entitlements?active=true&limit=50",
    "/v3/x402/webhooks/deliveries?limit=20",
  ]) {
    const t: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      await (await fetch(running.url + path, { headers: { authorization: `Bearer ${token}` } })).text();
      t.push(performance.now() - t0);
    }
    console.log(`${path}: p50 ${median(t).toFixed(1)} ms`);
  }
}

/** Every view drawn: the chart holds its data, and the sales, funnel, payments and attention lists their rows. */
const dashboardReady = () => {
  const q = (s: string) =>
    (globalThis as unknown as { document: { querySelector(s: string): unknown } }).document.querySelector(s);
  return !!(
    q("#revenue-chart[data-total] canvas") &&
    q("#sales-table tbody tr .spark canvas") &&
    q("#funnel-table tbody tr") &&
    q("#payments-table tbody tr") &&
    q("#attention-list li") &&
    q("#entitlements-table tbody tr")
  );
};
/** The revenue chart and the totals drawn (the first view; the tables follow as their reads come in). */
const chartReady = () =>
  !!(globalThis as unknown as { document: { querySelector(s: string): unknown } }).document.querySelector(
    "#revenue-chart[data-total] canvas",
  );
const openapiReady = () =>
  !!(globalThis as unknown as { document: { querySelector(s: string): unknown } }).document.querySelector(
    "#ops details",
  );

async function firstLoad(path: string, ready: () => boolean): Promise<number> {
  const page = await browser.context.newPage();
  await page.addInitScript(`sessionStorage.setItem("cidgate.dashboard.token", ${JSON.stringify(token)})`);
  await page.goto(running.url + path, { waitUntil: "commit" });
  await page.waitForFunction(ready, undefined, { timeout: 30_000, polling: "raf" });
  const ms = (await page.evaluate("performance.now()")) as number; // since the navigation started
  await page.close();
  return ms;
}

const dashboard: number[] = [];
const chart: number[] = [];
const baseline: number[] = [];
await firstLoad("/dashboard", dashboardReady); // warm: the server's first queries, chromium's first start
for (let i = 0; i < RUNS; i++) {
  baseline.push(await firstLoad("/openapi", openapiReady));
  dashboard.push(await firstLoad("/dashboard", dashboardReady));
  chart.push(await firstLoad("/dashboard", chartReady));
}
const d = median(dashboard);
const b = median(baseline);
console.log(
  `dashboard first load: p50 ${d.toFixed(0)} ms (min ${Math.min(...dashboard).toFixed(0)}, max ${Math.max(...dashboard).toFixed(0)})`,
);
console.log(`revenue chart drawn:  p50 ${median(chart).toFixed(0)} ms`);
console.log(`baseline /openapi:    p50 ${b.toFixed(0)} ms; ratio ${(d / b).toFixed(2)}`);
console.log(`target < 1000 ms: ${d < 1000 ? "met" : "NOT met"}`);
await browser.close();
await running.stop(true);
sqlite?.db.sqlite.close();
rmSync(dir, { recursive: true, force: true });
