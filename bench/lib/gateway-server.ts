/**
 * The cidgate side of bench/gateway.ts, in its own process (pinned to a core
 * by the bench): the whole app as src/index.ts boots and serves it (file database, WAL,
 * request logging at LOG_LEVEL), over a content folder the bench filled, with
 * the in-process facilitator settling on the bench's anvil, served by the
 * server factory (src/server.ts) exactly as `npm start` serves it. It mirrors
 * test/e2e/stack.ts, except that the chain belongs to the parent.
 *
 * The real facilitator is wrapped by `timedFacilitator`, which only counts and
 * times the calls (never answers itself): the bench proves that forged proofs
 * cost zero facilitator calls, and subtracts facilitator time from the paid
 * request to get the gateway's own share.
 *
 * Input: env BENCH_DIR (content/ inside it), BENCH_RPC_URL, BENCH_TOKEN,
 * BENCH_RELAYER_KEY, BENCH_SELLER, LOG_LEVEL; BENCH_DB, when set, is the
 * database (a postgres:// URL: bench/replicas.ts runs the same server on
 * PostgreSQL, the content index then in its own SQLite file in BENCH_DIR);
 * default the SQLite file BENCH_DIR/cidgate.db. Output: one line on stderr,
 * `READY {"url","control","cids"}`. A control server on another port answers
 * GET /stats (facilitator counters and timings) and POST /grant (entitlements
 * by hand, through the entitlements store, for many wallets at once). Ends on SIGTERM or when
 * stdin closes (the parent died).
 */
import { join } from "node:path";
import { getAddress } from "viem";
import { isPg } from "../../src/db/database";
import { createLocalFacilitator } from "../../src/facilitator/local";
import type { Facilitator } from "../../src/facilitator/types";
import { createLogger } from "../../src/http/logging";
import { startServer } from "../../src/server";
import { loadSettings } from "../../src/settings";

const need = (name: string) => {
  const v = process.env[name];
  if (!v) throw new Error(`gateway-server: ${name} is not set`);
  return v;
};
const dir = need("BENCH_DIR");
const rpcUrl = need("BENCH_RPC_URL");
const token = getAddress(need("BENCH_TOKEN"));
const relayerKey = need("BENCH_RELAYER_KEY") as `0x${string}`;
const seller = getAddress(need("BENCH_SELLER"));

/** Counts and times every call into the real facilitator; answers nothing itself. */
function timedFacilitator(inner: Facilitator) {
  const stats = { verify: 0, settle: 0, supported: 0, verifyMs: [] as number[], settleMs: [] as number[] };
  const timed = async <T>(p: () => Promise<T>, into: number[]) => {
    const t = performance.now();
    try {
      return await p();
    } finally {
      into.push(performance.now() - t);
    }
  };
  const facilitator: Facilitator = {
    verify: (r) => (stats.verify++, timed(() => inner.verify(r), stats.verifyMs)),
    settle: (r) => (stats.settle++, timed(() => inner.settle(r), stats.settleMs)),
    supported: () => (stats.supported++, inner.supported()),
    // Still the built-in facilitator: its success is the chain's word, not confirmed again (ledger/chain-check.ts).
    confirmsOnChain: inner.confirmsOnChain,
  };
  return { facilitator, stats };
}

const settings = loadSettings({
  CIDGATE_DB: process.env.BENCH_DB || join(dir, "cidgate.db"),
  CIDGATE_DATA_DIR: dir,
  HOST: "127.0.0.1",
  PORT: "0",
  CIDGATE_CONTENT_DIR: join(dir, "content"),
  CIDGATE_CONFIG_DIR: join(dir, "config"),
  USDC_ADDRESS_BASE_SEPOLIA: token,
  FACILITATOR_URL: "local",
  RPC_URL: rpcUrl,
  RELAYER_PRIVATE_KEY: relayerKey,
  FACILITATOR_TIMEOUT_MS: "20000",
  LOG_LEVEL: process.env.LOG_LEVEL ?? "info",
});
const log = createLogger(settings.logLevel);
const real = createLocalFacilitator({ rpcUrl, relayerPrivateKey: relayerKey, settings });
const { facilitator, stats } = timedFacilitator(real);
// Served as `npm start` serves it: the one server factory (Bun's router, the request log, the limits),
// over CIDGATE_DB as it opens it (db/database.ts: SQLite, or PostgreSQL with a local content index).
// Priced below, before READY, through the server's own stores (its catalog sees their writes at once).
const running = await startServer({
  settings,
  log,
  facilitator,
  jwtSecret: "bench-secret-bench-secret-bench-secret-01",
  pricing: false,
});
const { db, contentDb, stores } = running;

// Files unchanged since a previous run over this folder are not hashed again (size and mtime match).
const indexed = await stores.content.index();
if (indexed.errors.length) throw new Error(`indexing failed: ${JSON.stringify(indexed.errors)}`);
// A restart over the same database keeps its prices (and its ledger).
const priced = (await stores.instructions.list({ limit: 1 })).items.length > 0;
const instruction = priced
  ? undefined
  : await stores.instructions.create({
      name: "Access fee",
      description: "Access fee",
      requirements: [{ network: "base-sepolia", asset: token, pay_to: seller, amount: "10000" }],
    });
const cids: Record<string, string> = {};
for (const row of contentDb.sqlite
  .query<{ cid: string; path: string }, []>("SELECT cid, path FROM content_files")
  .all()) {
  cids[row.path] = row.cid;
  if (instruction) await stores.instructions.attachCid(instruction.id, row.cid);
}
const url = running.url;

/**
 * POST /grant {cid, payers}: an entitlement to `cid` for each payer, by hand (as the management
 * API's grant does, through the same store), in one transaction: the bench's sign-in wallets.
 */
async function grant(req: Request): Promise<Response> {
  const { cid, payers } = (await req.json()) as { cid: string; payers: string[] };
  const instruction = await stores.instructions.forCid(cid);
  if (!instruction) return new Response("unknown cid", { status: 404 });
  const now = Math.floor(Date.now() / 1000);
  const entitle = (payer: string) =>
    stores.entitlements.grant({ payer, cid, instructionId: instruction.id, note: "bench" }, now);
  // SQLite's transaction callback must not await (db/awaitable.ts); PostgreSQL's awaits each grant.
  if (isPg(db))
    await stores.transaction(async () => {
      for (const payer of payers) await entitle(payer);
    });
  else
    stores.transaction(() => {
      for (const payer of payers) entitle(payer);
    });
  return Response.json({ granted: payers.length });
}

const control = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/stats") return Response.json(stats);
    if (path === "/grant" && req.method === "POST") return grant(req);
    return new Response("no", { status: 404 });
  },
});

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  control.stop(true);
  await running.stop(true);
  real.close();
  process.exit(0);
}
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
// The parent holds our stdin open; EOF means it is gone, so go too.
void (async () => {
  for await (const _ of Bun.stdin.stream()) {
    // nothing is ever sent; we only wait for the end
  }
  await stop();
})();

console.error(`READY ${JSON.stringify({ url, control: `http://127.0.0.1:${control.port}`, cids })}`);
