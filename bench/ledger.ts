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
 * Options: --payments N (default 1000000), --cids N (10000), --iterations N (300),
 * --db <file> (seed it once and keep it: a later run with the same file measures without seeding),
 * --postgres <url> (PostgreSQL instead of SQLite: the database at <url> is seeded when its ledger
 * is empty, reused as it is otherwise, and left seeded; the server runs with CIDGATE_DB=<url>),
 * --seed-only (seed, or find seeded, and stop: a large database prepared once for several runs).
 * The PostgreSQL server is the caller's and is not pinned: give it a core of its own (with 2 cores,
 * the figures share them). Each query then costs a round trip over loopback, which SQLite has not.
 *
 *   npx bun bench/ledger.ts --postgres postgres://user@127.0.0.1:5432/cidgate_bench --payments 1000000
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

/** A payment as seeded: the columns the ledger store writes. */
interface PaymentRow {
  network: string;
  asset: string;
  payer: string;
  nonce: string;
  cid: string;
  instructionId: string;
  amount: string;
  payTo: string;
  state: "pending" | "settled" | "failed";
  txHash: string | null;
  createdAt: string;
}

interface FunnelSeed {
  byCid: { cid: string; hour: string; instructionId: string; offers: number; proofs: number }[];
  byInstruction: { instructionId: string; hour: string; offers: number; proofs: number }[];
  byShop: { hour: string; offers: number; proofs: number }[];
}

/** Where the bench seeds: the same rows on either engine, each written its fastest plain way. */
interface Seeder {
  /** What an earlier run left (its instructions by name, its payment ids, its first time); undefined when empty. */
  existing(): Promise<{ instructionIds: string[]; ids: number[]; yearAgo: number } | undefined>;
  catalog(
    instructions: { id: string; name: string; requirements: unknown }[],
    mappings: [string, string][],
    nowIso: string,
  ): Promise<void>;
  /** Inserts the rows (the rollups' triggers run on each), answering their ids in order. */
  payments(rows: PaymentRow[]): Promise<number[]>;
  funnel(...grains: [FunnelSeed["byCid"], FunnelSeed["byInstruction"], FunnelSeed["byShop"]]): Promise<void>;
  /** Statistics for the planner; the rollups' row count and the database's size. */
  finish(): Promise<{ rollupRows: number; size: string }>;
  close(): Promise<void>;
}

async function sqliteSeeder(dbPath: string, mayReuse: boolean): Promise<Seeder> {
  const { openDb } = await import("../src/db/client");
  const reuse = mayReuse && Bun.file(dbPath).size > 0;
  const db = openDb(dbPath);
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
  const insertFunnelShop = db.sqlite.prepare("INSERT INTO funnel_shop_hourly (hour, offers, proofs) VALUES (?, ?, ?)");
  // Seeding only: a page cache that holds the indexes (random payers and CIDs touch pages all over
  // them), and a commit per chunk of 100,000 rows (one transaction of a million spilled a 1 GB WAL).
  db.sqlite.exec("PRAGMA cache_size = -500000");
  return {
    async existing() {
      if (!reuse) return undefined;
      return {
        instructionIds: db.sqlite
          .query<{ id: string }, []>("SELECT id FROM payment_instructions ORDER BY name")
          .all()
          .map((r) => r.id),
        ids: db.sqlite
          .query<{ id: number }, []>("SELECT id FROM payments ORDER BY id")
          .all()
          .map((r) => r.id),
        yearAgo: Date.parse(db.sqlite.query<{ t: string }, []>("SELECT min(created_at) AS t FROM payments").get()!.t),
      };
    },
    async catalog(instructions, mappings, nowIso) {
      db.sqlite.transaction(() => {
        for (const i of instructions) insertPi.run(i.id, i.name, JSON.stringify(i.requirements), nowIso, nowIso);
        for (const [cid, instructionId] of mappings) insertCid.run(cid, instructionId, nowIso);
      })();
    },
    async payments(rows) {
      return db.sqlite.transaction(() =>
        rows.map((r) =>
          Number(
            insertPayment.run(
              r.network,
              r.asset,
              r.payer,
              r.nonce,
              r.cid,
              r.instructionId,
              r.amount,
              r.payTo,
              r.state,
              r.txHash,
              r.createdAt,
              r.createdAt,
            ).lastInsertRowid,
          ),
        ),
      )();
    },
    async funnel(byCid, byInstruction, byShop) {
      db.sqlite.transaction(() => {
        for (const r of byCid) insertFunnel.run(r.cid, r.hour, r.instructionId, r.offers, r.proofs);
        for (const r of byInstruction) insertFunnelInstruction.run(r.instructionId, r.hour, r.offers, r.proofs);
        for (const r of byShop) insertFunnelShop.run(r.hour, r.offers, r.proofs);
      })();
    },
    async finish() {
      db.sqlite.exec("PRAGMA wal_checkpoint(TRUNCATE)");
      db.sqlite.exec("ANALYZE");
      const rollupRows = db.sqlite
        .query<{ n: number }, []>(
          "SELECT (SELECT count(*) FROM sales_hourly) + (SELECT count(*) FROM sales_instruction_hourly) AS n",
        )
        .get()!.n;
      db.sqlite.close();
      return { rollupRows, size: `${(Bun.file(dbPath).size / 1024 / 1024).toFixed(0)} MB` };
    },
    async close() {
      db.sqlite.close();
    },
  };
}

/**
 * PostgreSQL: multi-row INSERTs through drizzle, 2,000 rows a statement (PostgreSQL takes at most
 * 65,535 parameters; a payment has 16), the rollups' triggers running on each row as in production.
 */
async function postgresSeeder(url: string): Promise<Seeder> {
  const { openPg } = await import("../src/db/pg");
  const schema = await import("../src/db/schema-pg");
  const pg = await openPg(url);
  const ROWS = 2_000;
  const chunks = <T>(rows: T[]) =>
    Array.from({ length: Math.ceil(rows.length / ROWS) }, (_, i) => rows.slice(i * ROWS, (i + 1) * ROWS));
  return {
    async existing() {
      const [{ n }] = await pg.sql`SELECT count(*)::int AS n FROM payments`;
      if (n === 0) return undefined;
      const instructions = await pg.sql`SELECT id FROM payment_instructions ORDER BY name`;
      const ids = await pg.sql`SELECT id::float8 AS id FROM payments ORDER BY id`;
      const [{ t }] = await pg.sql`SELECT min(created_at) AS t FROM payments`;
      return {
        instructionIds: instructions.map((r: { id: string }) => r.id),
        ids: ids.map((r: { id: number }) => r.id),
        yearAgo: Date.parse(t),
      };
    },
    async catalog(instructions, mappings, nowIso) {
      await pg.db
        .insert(schema.paymentInstructions)
        .values(instructions.map((i) => ({ ...i, description: null, createdAt: nowIso, updatedAt: nowIso })));
      for (const part of chunks(mappings))
        await pg.db
          .insert(schema.cidMappings)
          .values(part.map(([cid, instructionId]) => ({ cid, instructionId, createdAt: nowIso })));
    },
    async payments(rows) {
      const ids: number[] = [];
      await pg.transaction(async (tx) => {
        for (const part of chunks(rows)) {
          const inserted = await tx
            .insert(schema.payments)
            .values(
              part.map((r) => ({
                ...r,
                instructionVersion: 1,
                validBefore: 2_000_000_000,
                x402Version: 2,
                proofHash: "h",
                error: null,
                updatedAt: r.createdAt,
              })),
            )
            .returning({ id: schema.payments.id });
          for (const r of inserted) ids.push(r.id);
        }
      });
      return ids;
    },
    async funnel(byCid, byInstruction, byShop) {
      await pg.transaction(async (tx) => {
        for (const part of chunks(byCid)) await tx.insert(schema.funnelHourly).values(part);
        for (const part of chunks(byInstruction)) await tx.insert(schema.funnelInstructionHourly).values(part);
        for (const part of chunks(byShop)) await tx.insert(schema.funnelShopHourly).values(part);
      });
    },
    async finish() {
      await pg.sql`VACUUM ANALYZE`;
      const [{ n }] = await pg.sql`SELECT
        (SELECT count(*) FROM sales_hourly)::int + (SELECT count(*) FROM sales_instruction_hourly)::int AS n`;
      const [{ size }] = await pg.sql`SELECT pg_size_pretty(pg_database_size(current_database())) AS size`;
      await pg.close();
      return { rollupRows: n, size };
    },
    close: () => pg.close(),
  };
}

async function main() {
  const N = opt("payments", 1_000_000);
  const CIDS = opt("cids", 10_000);
  const ITER = opt("iterations", 300);
  const INSTRUCTIONS = 20;
  const postgres = args.includes("--postgres") ? args[args.indexOf("--postgres") + 1] : undefined;
  // --db <file>: seed it once and keep it; a later run with the same file measures without seeding.
  const given = args.includes("--db") ? args[args.indexOf("--db") + 1] : undefined;
  const dir = mkdtempSync(join(tmpdir(), "cidgate-bench-ledger-"));
  const dbPath = postgres ?? given ?? join(dir, "bench.db");
  const random = prng(13);

  const seeder = postgres ? await postgresSeeder(postgres) : await sqliteSeeder(dbPath, given !== undefined);
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
  const earlier = await seeder.existing();
  if (earlier) {
    // The database of an earlier run: the same CIDs and instructions, read back.
    instructionIds.splice(0, INSTRUCTIONS, ...earlier.instructionIds);
    for (const id of earlier.ids) ids.push(id); // a million: spread as arguments overflows the stack
    yearAgo = earlier.yearAgo;
    await seeder.close();
    console.log(`reusing ${postgres ? "the PostgreSQL database" : dbPath}: ${ids.length} payments`);
  } else {
    const nowIso = new Date(now).toISOString();
    const requirements = [{ network: "base-sepolia", asset: USDC, pay_to: PAY_TO, amount: "10000" }];
    await seeder.catalog(
      instructionIds.map((id, i) => ({ id, name: `instruction ${i}`, requirements })),
      cids.map((cid, i) => [cid, instructionIds[i % INSTRUCTIONS]]),
      nowIso,
    );
    const funnel = new Map<string, [number, number]>();
    const funnelTotals = new Map<string, [number, number]>();
    const funnelShop = new Map<string, [number, number]>();
    const CHUNK = 100_000;
    for (let first = 0; first < N; first += CHUNK) {
      const rows: PaymentRow[] = [];
      for (let i = first; i < Math.min(N, first + CHUNK); i++) {
        // In time order (ids follow creation, as in a live ledger), jittered within the step.
        const at = yearAgo + ((i + random()) / N) * 365 * DAY;
        const created = new Date(at).toISOString();
        const c = Math.floor(random() * CIDS);
        const instructionId = instructionIds[c % INSTRUCTIONS];
        const roll = random();
        const state = i >= N - N / 1000 ? "pending" : roll < 0.9 ? "settled" : "failed";
        const network = roll < 0.02 || roll > 0.97 ? "base" : "base-sepolia";
        rows.push({
          network,
          asset: USDC,
          payer: payers[Math.floor(random() * payers.length)],
          nonce: `0x${i.toString(16).padStart(64, "0")}`,
          cid: cids[c],
          instructionId,
          amount: String(10_000 * (1 + Math.floor(random() * 5))),
          payTo: PAY_TO,
          state,
          txHash: state === "settled" ? `0x${i.toString(16).padStart(64, "0")}` : null,
          createdAt: created,
        });
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
      for (const id of await seeder.payments(rows)) ids.push(id);
      process.stdout.write(`\rseeding: ${Math.min(N, first + CHUNK).toLocaleString()} payments`);
    }
    console.log("");
    await seeder.funnel(
      [...funnel].map(([k, [offers, proofs]]) => {
        const [cid, hour, instructionId] = k.split("|");
        return { cid, hour, instructionId, offers, proofs };
      }),
      [...funnelTotals].map(([k, [offers, proofs]]) => {
        const [hour, instructionId] = k.split("|");
        return { instructionId, hour, offers, proofs };
      }),
      [...funnelShop].map(([hour, [offers, proofs]]) => ({ hour, offers, proofs })),
    );
    const tSeeded = performance.now();
    const { rollupRows, size } = await seeder.finish();
    console.log(
      `inserts ${((tSeeded - t0) / 1000).toFixed(1)} s, ${postgres ? "VACUUM ANALYZE" : "checkpoint + ANALYZE"} ${((performance.now() - tSeeded) / 1000).toFixed(1)} s`,
    );
    console.log(
      `seeded ${N} payments, ${CIDS} CIDs, ${funnel.size} funnel rows, ${rollupRows} rollup rows in ${((performance.now() - t0) / 1000).toFixed(1)} s (${size})`,
    );
  }
  if (args.includes("--seed-only")) {
    rmSync(dir, { recursive: true, force: true });
    return;
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
