/**
 * Ledger at scale: `bun run bench:ledger` (or `npx bun bench/ledger.ts`).
 *
 * Seeds a fresh SQLite file (same migrations, so the sales rollup's triggers
 * run on every row) with 1,000,000 payments over 10,000 CIDs, 20 payment
 * instructions and a year of time (90% settled, 7% failed, the newest 0.1%
 * pending), plus the offer and proof counts a funnel would have gathered.
 * Then starts the real server (src/server.ts) in a child process pinned to
 * CPU 0 and measures from this process pinned to CPU 1, one request at a
 * time over loopback: the payments list (first and deep page, filters), its
 * totals over a month, the stats (a month of days: the whole shop, one CID,
 * one instruction), the breakdown table and /metrics; then the server's RSS.
 *
 * Options: --payments N (default 1000000), --cids N (10000), --iterations N (300).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CID } from "multiformats/cid";
import { sha256 } from "multiformats/hashes/sha2";

const args = process.argv.slice(2);
const opt = (name: string, fallback: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};

const SECRET = "bench-secret-bench-secret-bench-secret-0000";
const USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const PAY_TO = "0x6135561038E7C676473431842e586C8248276AED";
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** Child: the real server over the seeded file, on a free loopback port. */
async function serve(dbPath: string) {
  const { startServer } = await import("../src/server");
  const { loadSettings } = await import("../src/settings");
  const settings = loadSettings({
    CIDGATE_DB: dbPath,
    PORT: "0",
    LOG_LEVEL: "warn",
    JWT_SECRET: SECRET,
    CIDGATE_CONFIG_DIR: "/nonexistent",
    CIDGATE_CONTENT_DIR: "/nonexistent",
  });
  const unused = () => Promise.reject(new Error("unused"));
  const running = await startServer({
    settings,
    facilitator: { verify: unused, settle: unused, supported: unused },
    pricing: false,
  });
  console.log(`PORT ${running.server.port}`);
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** Deterministic: the same seed, the same ledger. */
function prng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function main() {
  const N = opt("payments", 1_000_000);
  const CIDS = opt("cids", 10_000);
  const ITER = opt("iterations", 300);
  const INSTRUCTIONS = 20;
  // --db <file>: seed it once and keep it; a later run with the same file measures without seeding.
  const given = args.includes("--db") ? args[args.indexOf("--db") + 1] : undefined;
  const dir = mkdtempSync(join(tmpdir(), "cidgate-bench-ledger-"));
  const dbPath = given ?? join(dir, "bench.db");
  const reuse = given !== undefined && Bun.file(given).size > 0;
  const random = prng(13);

  const { openDb } = await import("../src/db/client");
  const db = openDb(dbPath);
  const t0 = performance.now();
  const now = Date.now();
  let yearAgo = now - 365 * DAY;
  const ids: number[] = [];
  const instructionIds = Array.from({ length: INSTRUCTIONS }, () => Bun.randomUUIDv7());
  const cids = Array.from({ length: CIDS }, (_, i) =>
    CID.createV1(0x55, sha256.digest(new TextEncoder().encode(`bench file ${i}`)) as never).toString(),
  );
  const payers = Array.from(
    { length: 50_000 },
    (_, i) => `0x${(i + 1).toString(16).padStart(8, "0")}${"ab".repeat(16)}`.slice(0, 42) as string,
  );
  if (reuse) {
    // The seeded file of an earlier run: the same CIDs and instructions, read back.
    instructionIds.splice(
      0,
      INSTRUCTIONS,
      ...db.sqlite
        .query<{ id: string }, []>("SELECT id FROM payment_instructions ORDER BY name")
        .all()
        .map((r) => r.id),
    );
    for (const r of db.sqlite.query<{ id: number }, []>("SELECT id FROM payments ORDER BY id").all()) ids.push(r.id);
    yearAgo = Date.parse(db.sqlite.query<{ t: string }, []>("SELECT min(created_at) AS t FROM payments").get()!.t);
    db.sqlite.close();
    console.log(`reusing ${dbPath}: ${ids.length} payments`);
  } else {
    const insertPi = db.sqlite.prepare(
      "INSERT INTO payment_instructions (id, version, name, description, requirements, source, created_at, updated_at) VALUES (?, 1, ?, NULL, ?, 'api', ?, ?)",
    );
    const insertCid = db.sqlite.prepare(
      "INSERT INTO cid_mappings (cid, instruction_id, source, created_at) VALUES (?, ?, 'api', ?)",
    );
    // Seeded as rows, the way the ledger store writes them (the store itself stamps "now").
    const insertPayment = db.sqlite.prepare(
      `INSERT INTO payments (network, asset, payer, nonce, cid, instruction_id, instruction_version, amount, pay_to, state,
       tx_hash, valid_before, x402_version, proof_hash, error, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, 2000000000, 2, 'h', NULL, ?, ?)`,
    );
    const insertFunnel = db.sqlite.prepare(
      "INSERT INTO funnel_hourly (cid, hour, instruction_id, offers, proofs) VALUES (?, ?, ?, ?, ?)",
    );
    const insertFunnelInstruction = db.sqlite.prepare(
      "INSERT INTO funnel_instruction_hourly (instruction_id, hour, offers, proofs) VALUES (?, ?, ?, ?)",
    );
    const insertFunnelShop = db.sqlite.prepare(
      "INSERT INTO funnel_shop_hourly (hour, offers, proofs) VALUES (?, ?, ?)",
    );
    const nowIso = new Date(now).toISOString();
    const reqJson = JSON.stringify([{ network: "base-sepolia", asset: USDC, pay_to: PAY_TO, amount: "10000" }]);
    const funnel = new Map<string, [number, number]>();
    const funnelTotals = new Map<string, [number, number]>();
    const funnelShop = new Map<string, [number, number]>();
    // Seeding only: a page cache that holds the indexes (random payers and CIDs touch pages all over
    // them), and a commit every 100,000 rows (one transaction of a million spilled a 1 GB WAL).
    db.sqlite.exec("PRAGMA cache_size = -500000");
    db.sqlite.transaction(() => {
      instructionIds.forEach((id, i) => {
        insertPi.run(id, `instruction ${i}`, reqJson, nowIso, nowIso);
      });
      cids.forEach((cid, i) => {
        insertCid.run(cid, instructionIds[i % INSTRUCTIONS], nowIso);
      });
    })();
    const CHUNK = 100_000;
    const seedChunk = db.sqlite.transaction((first: number) => {
      for (let i = first; i < Math.min(N, first + CHUNK); i++) {
        // In time order (ids follow creation, as in a live ledger), jittered within the step.
        const at = yearAgo + ((i + random()) / N) * 365 * DAY;
        const created = new Date(at).toISOString();
        const c = Math.floor(random() * CIDS);
        const instructionId = instructionIds[c % INSTRUCTIONS];
        const roll = random();
        const state = i >= N - N / 1000 ? "pending" : roll < 0.9 ? "settled" : "failed";
        const network = roll < 0.02 || roll > 0.97 ? "base" : "base-sepolia";
        const r = insertPayment.run(
          network,
          USDC,
          payers[Math.floor(random() * payers.length)],
          `0x${i.toString(16).padStart(64, "0")}`,
          cids[c],
          instructionId,
          String(10_000 * (1 + Math.floor(random() * 5))),
          PAY_TO,
          state,
          state === "settled" ? `0x${i.toString(16).padStart(64, "0")}` : null,
          created,
          created,
        );
        ids.push(Number(r.lastInsertRowid));
        // A funnel: about four offers and one proof and a bit per payment.
        const hour = created.slice(0, 13);
        const offers = 3 + Math.floor(random() * 3);
        const proofs = 1;
        const fk = `${cids[c]}|${hour}|${instructionId}`;
        const f = funnel.get(fk) ?? [0, 0];
        f[0] += offers;
        f[1] += proofs;
        funnel.set(fk, f);
        const tk = `${hour}|${instructionId}`;
        const t = funnelTotals.get(tk) ?? [0, 0];
        t[0] += offers;
        t[1] += proofs;
        funnelTotals.set(tk, t);
        const s = funnelShop.get(hour) ?? [0, 0];
        s[0] += offers;
        s[1] += proofs;
        funnelShop.set(hour, s);
      }
    });
    for (let first = 0; first < N; first += CHUNK) {
      seedChunk(first);
      process.stdout.write(`\rseeding: ${Math.min(N, first + CHUNK).toLocaleString()} payments`);
    }
    console.log("");
    db.sqlite.transaction(() => {
      for (const [k, [o, p]] of funnel) {
        const [cid, hour, instructionId] = k.split("|");
        insertFunnel.run(cid, hour, instructionId, o, p);
      }
      for (const [k, [o, p]] of funnelTotals) {
        const [hour, instructionId] = k.split("|");
        insertFunnelInstruction.run(instructionId, hour, o, p);
      }
      for (const [hour, [o, p]] of funnelShop) insertFunnelShop.run(hour, o, p);
    })();
    const tSeeded = performance.now();
    db.sqlite.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    db.sqlite.exec("ANALYZE");
    console.log(
      `inserts ${((tSeeded - t0) / 1000).toFixed(1)} s, checkpoint + ANALYZE ${((performance.now() - tSeeded) / 1000).toFixed(1)} s`,
    );
    const rollupRows = db.sqlite
      .query<{ n: number }, []>(
        "SELECT (SELECT count(*) FROM sales_hourly) + (SELECT count(*) FROM sales_instruction_hourly) AS n",
      )
      .get()!.n;
    db.sqlite.close();
    const sizeMb = Bun.file(dbPath).size / 1024 / 1024;
    console.log(
      `seeded ${N} payments, ${CIDS} CIDs, ${funnel.size} funnel rows, ${rollupRows} rollup rows in ${((performance.now() - t0) / 1000).toFixed(1)} s (${sizeMb.toFixed(0)} MB)`,
    );
  }
  const hasTaskset = spawnSync("taskset", ["-V"]).status === 0;
  const cmd = hasTaskset ? "taskset" : process.execPath;
  const cmdArgs = [...(hasTaskset ? ["-c", "0", process.execPath] : []), import.meta.path, "--serve", dbPath];
  const child = spawn(cmd, cmdArgs, { stdio: ["ignore", "pipe", "inherit"] });
  if (hasTaskset) spawnSync("taskset", ["-cp", "1", String(process.pid)], { stdio: "ignore" });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      let buf = "";
      child.stdout!.on("data", (d) => {
        buf += d;
        const m = /PORT (\d+)/.exec(buf);
        if (m) resolve(Number(m[1]));
      });
      child.on("exit", (code) => reject(new Error(`server exited ${code}`)));
    });
    const serverPid = hasTaskset
      ? Number(
          spawnSync("pgrep", ["-P", String(child.pid)])
            .stdout.toString()
            .trim(),
        ) || child.pid!
      : child.pid!;
    const rssMb = () => {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${serverPid}/status`, "utf8"));
      return m ? Number(m[1]) / 1024 : Number.NaN;
    };
    const rssAtStart = rssMb();

    const { createToken } = await import("../src/http/token");
    const token = await createToken(SECRET, { scopes: ["read"], ttlSeconds: 3600 });
    const base = `http://127.0.0.1:${port}`;
    const headers = { authorization: `Bearer ${token}` };

    /** `iterations`: fewer for the slow informational rows. */
    async function measure(name: string, url: (i: number) => string, target?: string, iterations = ITER) {
      for (let i = 0; i < Math.min(30, iterations); i++) await (await fetch(url(i), { headers })).arrayBuffer();
      const times: number[] = [];
      for (let i = 0; i < iterations; i++) {
        const s = performance.now();
        const res = await fetch(url(i + 30), { headers });
        await res.arrayBuffer();
        times.push(performance.now() - s);
        if (!res.ok) throw new Error(`${name}: HTTP ${res.status} ${await res.text()}`);
      }
      times.sort((a, b) => a - b);
      console.log(
        `${name.padEnd(52)} p50 ${percentile(times, 50).toFixed(2).padStart(7)} ms   p99 ${percentile(times, 99).toFixed(2).padStart(7)} ms   RSS ${rssMb().toFixed(0)} MB${target ? `   (target ${target})` : ""}`,
      );
    }

    const iso = (ms: number) => new Date(ms).toISOString();
    // A month somewhere in the year, uneven bounds (totals need the ledger's edges too).
    const monthFrom = (i: number) => yearAgo + 30 * DAY + (i % 200) * DAY + 1234567;
    const pToken = (id: number) => Buffer.from(`p1:${id}`).toString("base64url");
    const pick = (i: number) => (i * 7919) % CIDS;
    const P = "/v3/x402/payments";

    console.log(`\n${ITER} sequential requests each (30 for the slow rows) over loopback, after up to 30 warm-up:`);
    await measure("payments: first page (limit 20), totals of all", () => `${base}${P}?limit=20`, "p50 < 5 ms");
    await measure(
      "payments: deep page (limit 20, 90% down), totals of all",
      (i) => `${base}${P}?limit=20&pageToken=${pToken(ids[Math.floor(N * 0.1) + (i % 1000)])}`,
      "p50 < 5 ms",
    );
    await measure("payments: cid filter (first page + its totals)", (i) => `${base}${P}?cid=${cids[pick(i)]}`);
    await measure(
      "payments: payer filter (first page + its totals)",
      (i) => `${base}${P}?payer=${payers[(i * 31) % payers.length].toUpperCase().replace("0X", "0x")}`,
    );
    await measure(
      "payments: a month, uneven bounds (page + totals)",
      (i) => `${base}${P}?from=${iso(monthFrom(i))}&to=${iso(monthFrom(i) + 30 * DAY)}`,
      "p50 < 20 ms",
    );
    await measure(
      "stats: a month of days, whole shop",
      (i) => `${base}/v3/x402/stats?bucket=day&from=${iso(monthFrom(i))}&to=${iso(monthFrom(i) + 30 * DAY)}`,
      "p50 < 20 ms",
    );
    await measure(
      "stats: a month of days, one instruction",
      (i) =>
        `${base}/v3/x402/stats?bucket=day&instruction=${instructionIds[i % INSTRUCTIONS]}&from=${iso(monthFrom(i))}&to=${iso(monthFrom(i) + 30 * DAY)}`,
      "p50 < 20 ms",
    );
    await measure(
      "stats: a month of days, one CID",
      (i) =>
        `${base}/v3/x402/stats?bucket=day&cid=${cids[pick(i)]}&from=${iso(monthFrom(i))}&to=${iso(monthFrom(i) + 30 * DAY)}`,
      "p50 < 20 ms",
    );
    await measure("stats: the year by month, whole shop", () => `${base}/v3/x402/stats?bucket=month`, undefined, 30);
    await measure("stats: the last 48 hours by hour", () => `${base}/v3/x402/stats?bucket=hour`);
    await measure(
      "breakdown: a month by instruction",
      (i) =>
        `${base}/v3/x402/stats/breakdown?by=instruction&from=${iso(monthFrom(i))}&to=${iso(monthFrom(i) + 30 * DAY)}`,
    );
    await measure(
      "breakdown: a month by CID (top 50 by revenue)",
      (i) => `${base}/v3/x402/stats/breakdown?by=cid&from=${iso(monthFrom(i))}&to=${iso(monthFrom(i) + 30 * DAY)}`,
      undefined,
      30,
    );
    await measure("/metrics", () => `${base}/metrics`);
    console.log(`\nserver RSS: ${rssAtStart.toFixed(0)} MB at start, ${rssMb().toFixed(0)} MB after (target < 200 MB)`);
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
    rmSync(dir, { recursive: true, force: true });
  }
}

if (args[0] === "--serve") await serve(args[1]);
else await main();
