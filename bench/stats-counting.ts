/**
 * What counting offers costs the 402: `npx bun bench/stats-counting.ts`.
 *
 * The gateway's handler for a priced CID with no proof (the 402, the hot
 * path), built twice over one catalog: as the server runs it (purchase
 * wrapped by observePurchase: an offer counted per CID and hour; the request
 * log told the status for /metrics) and without either, both behind the
 * request log (lines to /dev/null). Single process,
 * in-process calls (no HTTP), one Request object reused, the two alternated
 * in rounds; the median CPU time per call of each and their difference.
 * bench:gateway gives the whole 402's server CPU per request to compare it with.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { openDb } from "../src/db/client";
import { createAccessTokens } from "../src/entitlements/access-token";
import { createSiwx } from "../src/entitlements/siwx";
import { createCatalog } from "../src/gateway/catalog";
import { createPurchase } from "../src/gateway/purchase";
import { createGatewayHandler } from "../src/gateway/routes";
import { createLogger, withRequestLog } from "../src/http/logging";
import { loadSettings } from "../src/settings";
import { observePurchase } from "../src/stats/observe";
import { createStats } from "../src/stats/service";
import { createStores } from "../src/stores";

const ROUNDS = Number(process.env.ROUNDS ?? 21);
const CALLS = Number(process.env.CALLS ?? 50_000);
const SECRET = "bench-secret-bench-secret-bench-secret-0000";

const dir = mkdtempSync(join(tmpdir(), "cidgate-bench-counting-"));
try {
  const settings = loadSettings({
    CIDGATE_DB: ":memory:",
    PUBLIC_URL: "https://gw.example.com",
    CIDGATE_CONTENT_DIR: join(dir, "content"),
    CIDGATE_CONFIG_DIR: join(dir, "config"),
  });
  const db = openDb(":memory:");
  const stores = createStores(db, settings);
  mkdirSync(settings.contentDir, { recursive: true });
  writeFileSync(join(settings.contentDir, "a.txt"), "paid words");
  await stores.content.index();
  const { cid } = stores.content.list()[0];
  const instruction = stores.instructions.create({
    name: "fee",
    requirements: [
      {
        network: "base-sepolia",
        asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
        pay_to: "0x2222222222222222222222222222222222222222",
        amount: "10000",
      },
    ],
  });
  stores.instructions.attachCid(instruction.id, cid);

  const catalog = createCatalog(stores, settings);
  const unused = () => {
    throw new Error("unused");
  };
  const purchase = createPurchase({
    catalog,
    payments: stores.payments,
    settler: { pay: unused, confirmHeld: unused },
    entitlements: stores.entitlements,
    accessTokens: createAccessTokens({ managementSecret: SECRET }),
    accessTokenTtlSeconds: 3600,
    siwx: createSiwx({ publicUrl: settings.publicUrl, secret: SECRET, nonces: stores.siwxNonces }),
    paymentIdentifiers: stores.paymentIdentifiers,
  });
  const stats = createStats(db);
  const plain = createGatewayHandler({ purchase, secureCookies: true });
  const counted = createGatewayHandler({
    purchase: observePurchase(purchase, { counters: stats.counters, metrics: stats.metrics, peek: catalog.peek }),
    secureCookies: true,
  });
  const request = new Request(`http://localhost/x402/cid/${cid}`);
  // Both behind the request log, as the server runs them (its lines to /dev/null, as bench:gateway does).
  const log = createLogger("info", pino.destination({ dest: "/dev/null", sync: true }));
  const pathOf = () => `/x402/cid/${cid}`;
  const variants: Record<string, (r: Request) => Response | Promise<Response>> = {
    plain: withRequestLog((r) => plain(r, cid, false), log, pathOf),
    counted: withRequestLog((r) => counted(r, cid, false), log, pathOf, stats.metrics.requestCounter("/x402/cid/:cid")),
  };
  if ((variants.counted(request) as Response).status !== 402) throw new Error("not a 402");

  const names = Object.keys(variants);
  const times: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of round % 2 ? names : [...names].reverse()) {
      const fn = variants[name];
      // CPU time, not wall time: other processes on the machine take the core away, not CPU time.
      const start = process.cpuUsage();
      for (let i = 0; i < CALLS; i++) fn(request);
      const used = process.cpuUsage(start);
      times[name].push((used.user + used.system) / CALLS);
    }
    stats.counters.flush(); // as the server's timer does, every 5 s
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const p = median(times.plain);
  const c = median(times.counted);
  console.log(`${ROUNDS} rounds of ${CALLS} calls each, alternated; median CPU time per 402 (in-process, no HTTP):`);
  console.log(`  without counting: ${p.toFixed(3)} us`);
  console.log(`  with counting:    ${c.toFixed(3)} us`);
  console.log(`  difference:       ${((c - p) * 1000).toFixed(0)} ns per 402`);
  console.log(`offers counted: ${stats.counters.totals().offers.toLocaleString()}`);
  db.sqlite.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
