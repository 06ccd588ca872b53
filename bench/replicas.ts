/**
 * PostgreSQL against SQLite (issue 14, "## Benches"): the same server
 * (bench/lib/gateway-server.ts, served as `npm start` serves it, the built-in
 * facilitator on a local anvil) on either engine, in one run:
 *
 *   1. the 402 path at 64 connections: req/s, the server's CPU per request,
 *      and PostgreSQL's CPU during it (the catalog stays in memory: none
 *      expected but the stats flush);
 *   2. the paid request, sequential, a fresh authorization each, settled on
 *      the chain: the gateway's share (total - facilitator verify + settle,
 *      timed inside the server), where the ledger's claim, the settled row,
 *      the entitlement and its event are written.
 *
 * Each round starts one server per engine, on a fresh database (a new SQLite
 * file; a new PostgreSQL database), the engines alternating, and the ratio
 * PostgreSQL / SQLite is taken per round; the figures are medians of the
 * rounds. The server and PostgreSQL (postmaster and backends) share CPU 0, as
 * the server and its in-process SQLite do; wrk, anvil and this process run on
 * CPU 1 (taskset). PostgreSQL is the tests' own (test/support/postgres.ts:
 * Debian's binaries, a throwaway cluster, fsync off): the figures are the
 * engine's cost on loopback, not a durable server's commit latency.
 *
 *   bun run bench:replicas             (npx bun bench/replicas.ts)
 *   BENCH_SECONDS=5 BENCH_ROUNDS=3 BENCH_PAID=60 LOG_LEVEL=info   (defaults)
 *   BENCH_PG_CPU=1: PostgreSQL on the load's core instead, as a database on
 *   its own machine would not take the server's CPU (each round trip then
 *   costs no switch between the two on one core).
 *
 * Needs wrk, taskset (util-linux) and PostgreSQL's binaries. About 2 min.
 * Figures: docs/BENCHMARKS.md.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { privateKeyToAccount } from "viem/accounts";
import { startDevnet } from "../src/chain/devnet";
import { createTestDatabase, pgAvailable, testServer } from "../test/support/postgres";
import {
  type Child,
  children,
  LOAD_CPU,
  median,
  percentile,
  pin,
  SERVER_CPU,
  startChild,
  stopChild,
} from "./lib/children";
import { offerOf, paidProof } from "./lib/proofs";
import { cpuMs, haveTaskset, haveWrk, runWrk, type WrkResult } from "./lib/wrk";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PAID = Number(process.env.BENCH_PAID ?? 60);
const PAID_WARM = 5;
const CONNECTIONS = 64;
const DEADLINE_MS = 10 * 60_000;
const PG_CPU = Number(process.env.BENCH_PG_CPU ?? SERVER_CPU);
const ENGINES = ["sqlite", "postgres"] as const;
type Engine = (typeof ENGINES)[number];

if (!haveWrk()) {
  console.error("bench:replicas needs wrk (Debian/Ubuntu: apt-get install -y wrk)");
  process.exit(1);
}
if (!(await pgAvailable("bench:replicas"))) process.exit(1);
if (!haveTaskset()) console.warn("taskset not found: nothing is pinned; figures are less comparable.");

const f0 = (n: number) => Math.round(n).toLocaleString("en-US");
const f2 = (n: number) => n.toFixed(2);
const pct = (n: number) => `${(n * 100).toFixed(0)}%`;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

/** The postmaster and every process it forked (backends, checkpointer...), by /proc's children lists. */
function pgProcesses(postmaster: number): number[] {
  const out = Bun.spawnSync(["pgrep", "-P", String(postmaster)])
    .stdout.toString()
    .trim();
  return [postmaster, ...out.split("\n").filter(Boolean).map(Number)];
}
/** CPU time (ms) PostgreSQL's processes used so far; backends that ended meanwhile are not counted. */
const pgCpuMs = (postmaster: number) => pgProcesses(postmaster).reduce((sum, pid) => sum + (cpuMs(pid) ?? 0), 0);

pin(process.pid, LOAD_CPU);
const startedAt = performance.now();
const loadBefore = load();
const dirs: string[] = [];
let devnet: Awaited<ReturnType<typeof startDevnet>> | undefined;
async function abort(why: string, code: number) {
  console.error(`bench:replicas: ${why}, stopping everything`);
  for (const c of children) c.kill("SIGKILL");
  await devnet?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  process.exit(code);
}
const deadline = setTimeout(() => void abort(`over ${DEADLINE_MS / 1000} s`, 1), DEADLINE_MS);
process.on("SIGINT", () => void abort("interrupted", 130));
process.on("SIGTERM", () => void abort("terminated", 143));

// PostgreSQL on the servers' core, before any backend is forked (they inherit the postmaster's mask).
const postgres = await testServer();
for (const pid of pgProcesses(postgres.pid)) pin(pid, PG_CPU, true);
// A database is fresh per server start, so a buyer who paid in one round pays again in the next.
devnet = await startDevnet({ buyers: PAID_WARM + PAID });
pin(devnet.pid, LOAD_CPU);
const buyers = devnet.buyers.map((b) => privateKeyToAccount(b.privateKey));

async function startGateway(engine: Engine): Promise<Child> {
  const dir = mkdtempSync(join(tmpdir(), "cidgate-bench-replicas-"));
  dirs.push(dir);
  mkdirSync(join(dir, "content"), { recursive: true });
  writeFileSync(join(dir, "content", "article.md"), `# A short article\n\n${"Paid words. ".repeat(300)}\n`);
  return startChild("gateway-server.ts", {
    BENCH_DIR: dir,
    BENCH_DB: engine === "postgres" ? await createTestDatabase() : "",
    BENCH_RPC_URL: devnet!.rpcUrl,
    BENCH_TOKEN: devnet!.token,
    BENCH_RELAYER_KEY: devnet!.relayer.privateKey,
    BENCH_SELLER: devnet!.seller.address,
    LOG_LEVEL: process.env.LOG_LEVEL ?? "info",
  });
}

interface EngineRound {
  w402: WrkResult;
  /** PostgreSQL's CPU per 402, in us (SQLite: its work is in the server's own CPU). */
  pgUs402: number;
  shareMs: number[];
  totalMs: number[];
  /** PostgreSQL's CPU per paid request, in us. */
  pgUsPaid: number;
}

async function measure(engine: Engine): Promise<EngineRound> {
  const gw = await startGateway(engine);
  try {
    const url = `${gw.ready.url}/x402/cid/${(gw.ready.cids as Record<string, string>)["article.md"]}`;
    const stats = async () =>
      (await (await fetch(`${gw.ready.control}/stats`)).json()) as { verifyMs: number[]; settleMs: number[] };

    // 1. The 402 path.
    const offer = await offerOf(await fetch(url));
    await runWrk({ url, connections: CONNECTIONS, seconds: 2, cpu: LOAD_CPU }); // warm-up: JIT, caches
    const pgBefore = pgCpuMs(postgres.pid);
    const w402 = await runWrk({
      url,
      connections: CONNECTIONS,
      seconds: SECONDS,
      cpu: LOAD_CPU,
      serverPid: gw.proc.pid,
    });
    const pgUs402 = ((pgCpuMs(postgres.pid) - pgBefore) * 1000) / w402.requests;
    if (w402.non2xx3xx !== w402.requests || w402.errors)
      throw new Error(`${engine} 402 path: ${w402.non2xx3xx} of ${w402.requests} not 2xx (all should be 402)`);

    // 2. The paid request, one at a time.
    const pay = async (header: [string, string]) => {
      const t = performance.now();
      const res = await fetch(url, { headers: { [header[0]]: header[1] } });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${engine}: a paid request got ${res.status}`);
      return performance.now() - t;
    };
    const proofs = await Promise.all(buyers.map((b, i) => paidProof(i % 2 ? 2 : 1, b, offer)));
    for (const p of proofs.slice(0, PAID_WARM)) await pay(p);
    const before = await stats();
    const pgPaidBefore = pgCpuMs(postgres.pid);
    const totalMs: number[] = [];
    for (const p of proofs.slice(PAID_WARM)) totalMs.push(await pay(p));
    const pgUsPaid = ((pgCpuMs(postgres.pid) - pgPaidBefore) * 1000) / PAID;
    const after = await stats();
    const verify = after.verifyMs.slice(before.verifyMs.length);
    const settle = after.settleMs.slice(before.settleMs.length);
    if (verify.length !== PAID || settle.length !== PAID)
      throw new Error(`${engine}: expected ${PAID} verify and settle calls, saw ${verify.length} and ${settle.length}`);
    const shareMs = totalMs.map((t, i) => t - verify[i] - settle[i]);
    return { w402, pgUs402, shareMs, totalMs, pgUsPaid };
  } finally {
    await stopChild(gw.proc);
  }
}

console.log(
  `bench:replicas: ${ROUNDS} rounds, ${SECONDS} s per 402 measure, ${PAID} paid requests per engine and round; ` +
    `cidgate on CPU ${SERVER_CPU}, PostgreSQL on CPU ${PG_CPU}, wrk + anvil + bench on CPU ${LOAD_CPU}; load average ${loadBefore}\n`,
);

const rounds: Record<Engine, EngineRound>[] = [];
try {
  for (let i = 0; i < ROUNDS; i++) {
    // Alternating which engine goes first, so neither always runs on the warmer machine.
    const order = i % 2 ? [...ENGINES].reverse() : [...ENGINES];
    const round = {} as Record<Engine, EngineRound>;
    for (const engine of order) round[engine] = await measure(engine);
    rounds.push(round);
    const { sqlite: s, postgres: p } = round;
    console.log(
      `round ${i + 1}: 402 sqlite ${f0(s.w402.rps)} req/s (${f2(s.w402.serverCpuUsPerRequest ?? Number.NaN)} us CPU) | ` +
        `postgres ${f0(p.w402.rps)} req/s (${f2(p.w402.serverCpuUsPerRequest ?? Number.NaN)} us CPU, PostgreSQL ${f2(p.pgUs402)} us) | ratio ${pct(p.w402.rps / s.w402.rps)}`,
    );
    console.log(
      `         paid gateway share p50 sqlite ${f2(median(s.shareMs))} ms | postgres ${f2(median(p.shareMs))} ms ` +
        `(PostgreSQL CPU ${f0(p.pgUsPaid)} us per paid request) | ratio ${f2(median(p.shareMs) / median(s.shareMs))}x`,
    );
  }

  const med = (f: (r: Record<Engine, EngineRound>) => number) => median(rounds.map(f));
  const row = (what: string, s: string, p: string, ratio: string) => `| ${what} | ${s} | ${p} | ${ratio} |`;
  const table = [
    `| measure (median of ${ROUNDS} rounds) | SQLite | PostgreSQL | PostgreSQL / SQLite |`,
    "|---|---|---|---|",
    row(
      `402 path, ${CONNECTIONS} conns`,
      `${f0(med((r) => r.sqlite.w402.rps))} req/s, p99 ${f2(med((r) => r.sqlite.w402.p99Ms))} ms`,
      `${f0(med((r) => r.postgres.w402.rps))} req/s, p99 ${f2(med((r) => r.postgres.w402.p99Ms))} ms`,
      pct(med((r) => r.postgres.w402.rps / r.sqlite.w402.rps)),
    ),
    row(
      "402 path, server CPU per request",
      `${f2(med((r) => r.sqlite.w402.serverCpuUsPerRequest ?? Number.NaN))} us`,
      `${f2(med((r) => r.postgres.w402.serverCpuUsPerRequest ?? Number.NaN))} us + PostgreSQL ${f2(med((r) => r.postgres.pgUs402))} us`,
      pct(
        med(
          (r) =>
            ((r.postgres.w402.serverCpuUsPerRequest ?? Number.NaN) + r.postgres.pgUs402) /
            (r.sqlite.w402.serverCpuUsPerRequest ?? Number.NaN),
        ),
      ),
    ),
    row(
      `paid request (${PAID} sequential), gateway share`,
      `p50 ${f2(med((r) => median(r.sqlite.shareMs)))} ms, p99 ${f2(med((r) => percentile(r.sqlite.shareMs, 99)))} ms`,
      `p50 ${f2(med((r) => median(r.postgres.shareMs)))} ms, p99 ${f2(med((r) => percentile(r.postgres.shareMs, 99)))} ms`,
      `${f2(med((r) => median(r.postgres.shareMs) / median(r.sqlite.shareMs)))}x (p50)`,
    ),
    row(
      "paid request, total (facilitator included)",
      `p50 ${f2(med((r) => median(r.sqlite.totalMs)))} ms`,
      `p50 ${f2(med((r) => median(r.postgres.totalMs)))} ms`,
      `${f2(med((r) => median(r.postgres.totalMs) / median(r.sqlite.totalMs)))}x`,
    ),
    row("PostgreSQL CPU per paid request", "—", `${f0(med((r) => r.postgres.pgUsPaid))} us`, "—"),
  ];
  console.log(`\n${table.join("\n")}`);
  console.log(
    `\nload average before ${loadBefore}, after ${load()}; bench:replicas took ${f0((performance.now() - startedAt) / 1000)} s`,
  );
} finally {
  for (const c of [...children]) await stopChild(c);
  await devnet.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  clearTimeout(deadline);
}
process.exit(0);
