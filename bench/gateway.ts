/**
 * The paid gateway under load, side by side with a bare Bun.serve, in one run:
 *
 *   1. the 402 path (no proof) vs a bare Bun.serve answering the same 402
 *      (same status, headers, body): req/s and p99 at 64 connections;
 *   2. forged proofs (bad signature, a distinct proof per request so no cache
 *      helps): rejections/s, and zero facilitator calls;
 *   3. a 100 MiB paid download vs bare Bun.file: throughput, peak RSS
 *      (run last, in a fresh cidgate process, so the peak is the download's);
 *   4. the paid request on the local chain, end to end, with the gateway's
 *      own share (total - facilitator verify+settle) apart;
 *   5. (issue 9) the entitled re-download: a buyer who paid sends a fresh
 *      authorization again and again; served without settling: latency,
 *      facilitator calls (0) and the seller's balance (unchanged, read on anvil);
 *   6. (issue 9) SIGN-IN-WITH-X checks: valid sign-ins from many entitled
 *      wallets (one header each: a nonce is single-use per address), sent by a
 *      Bun client loop: accepted/s and the server's CPU per check;
 *   7. (issue 9) the 100 MiB download with the buyer's access token
 *      (`Authorization: Bearer`), alternating with bare Bun.file rounds.
 *
 *   bun run bench:gateway              (npx bun bench/gateway.ts)
 *   BENCH_SECONDS=5 BENCH_ROUNDS=3 BENCH_PAID=100 BENCH_ENTITLED=100 BENCH_SIWX=4000 LOG_LEVEL=info   (defaults)
 *
 * Needs wrk (Debian/Ubuntu: `apt-get install -y wrk`; macOS: `brew install wrk`)
 * and Linux for taskset and /proc (server CPU time per request, RSS).
 * Each server runs in its own process pinned to CPU 0; wrk, this process and
 * anvil run on CPU 1 (taskset; unpinned without it). Besides req/s, the server's
 * CPU time per request is printed: it hardly moves when other processes share
 * the machine, while req/s does. The servers log as production does
 * (LOG_LEVEL, default info) to /dev/null. About 2.5 min; everything started here
 * (anvil, both servers, wrk) is stopped at the end, on Ctrl-C and past a deadline.
 * Targets (issue 4, "## Performance"; issue 9, "## Bench"): TARGETS below.
 * Figures: docs/BENCHMARKS.md.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, erc20Abi, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startDevnet } from "../src/chain/devnet";
import { children, LOAD_CPU, median, percentile, pin, SERVER_CPU, startChild, stopChild } from "./lib/children";
import { authorizationFor, offerOf, paidProof, proofHeader, sign, siwxHeaderByClient, siwxHeaders } from "./lib/proofs";
import { cpuMs, haveTaskset, haveWrk, runWrk, type WrkResult } from "./lib/wrk";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PAID = Number(process.env.BENCH_PAID ?? 100);
const PAID_WARM = 6;
/** Entitled re-downloads (fresh authorization each, never settled), sequential. */
const ENTITLED = Number(process.env.BENCH_ENTITLED ?? 100);
/** Sign-ins per round, each from its own entitled wallet (a header is single-use). */
const SIWX_PER_ROUND = Number(process.env.BENCH_SIWX ?? 4000);
const SIWX_WARM = 1000;
/** Requests in flight from the Bun client loop that sends the sign-ins. */
const SIWX_CONNECTIONS = 32;
const CONNECTIONS = 64;
const DOWNLOAD_CONNECTIONS = 4;
const BIG_MIB = 100;
/** Distinct forged proofs per version: more than the gateway's signature memo holds (10,000), so none is a cache hit. */
const FORGED = 12_000;
/** The whole run is bounded: past this, everything is stopped and the bench fails. */
const DEADLINE_MS = 6 * 60_000;

const TARGETS = {
  rpsRatio: 0.7,
  p99Ms: 5,
  forgedPerSecond: 5000,
  downloadRatio: 0.8,
  rssMiB: 150,
  gatewayShareP50Ms: 2,
  // issue 9, "## Bench"
  entitledShareP50Ms: 2,
  siwxPerSecond: 3000,
  tokenDownloadRatio: 0.8,
};

if (!haveWrk()) {
  console.error(
    "bench:gateway needs wrk, the HTTP load generator.\n  Debian/Ubuntu: sudo apt-get update && sudo apt-get install -y wrk\n  macOS: brew install wrk",
  );
  process.exit(1);
}
if (!haveTaskset())
  console.warn(
    "taskset not found (util-linux): servers and load generator are not pinned; figures are less comparable.",
  );

// --- processes: bench/lib/children.ts --------------------------------------

/** VmRSS and VmHWM (peak) of a process in KiB; NaN off Linux. */
function memoryKiB(pid: number): { rss: number; hwm: number } {
  let status = "";
  try {
    status = readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    // no /proc: the figures print as NaN
  }
  const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
  return { rss: kib("VmRSS"), hwm: kib("VmHWM") };
}

/** Resets the peak-RSS mark (VmHWM) to the current RSS, so the next phase's peak is its own. */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

// --- figures ---------------------------------------------------------------

const f0 = (n: number) => Math.round(n).toLocaleString("en-US");
const f1 = (n: number) => n.toFixed(1);
const f2 = (n: number) => n.toFixed(2);
const cpuText = (r: WrkResult) =>
  r.serverCpuUsPerRequest === undefined ? "" : `(server CPU ${f1(r.serverCpuUsPerRequest)} us/req)`;
const pct = (n: number) => `${(n * 100).toFixed(0)}%`;
const mib = (kib: number) => `${(kib / 1024).toFixed(0)} MiB`;
const gbps = (bytesPerSecond: number) => `${(bytesPerSecond / 1024 ** 3).toFixed(2)} GiB/s`;
const verdict = (ok: boolean) => (ok ? "MET" : "NOT MET");

function statusLine(r: WrkResult) {
  return Object.entries(r.statuses)
    .map(([s, n]) => `${s}x${n}`)
    .join(" ");
}

/** Every request of the run answered `status` (counted in Lua), with no socket errors. */
function expectOnly(r: WrkResult, status: number, what: string) {
  const other = Object.entries(r.statuses).filter(([s]) => Number(s) !== status);
  if (other.length || !r.statuses[status]) throw new Error(`${what}: expected only ${status}, got ${statusLine(r)}`);
  if (r.errors) throw new Error(`${what}: ${r.errors}`);
}

/**
 * Without Lua status counting (which would cost wrk a copy of every body and
 * make it the bottleneck): all answers were 2xx (`ok`) or all were not; the
 * exact status was checked by a request before the load.
 */
function expectAll(r: WrkResult, ok: boolean, what: string) {
  if (r.requests === 0) throw new Error(`${what}: no request completed`);
  if (r.non2xx3xx !== (ok ? 0 : r.requests))
    throw new Error(`${what}: ${r.non2xx3xx} of ${r.requests} answers were not 2xx/3xx`);
  if (r.errors) throw new Error(`${what}: ${r.errors}`);
}

// --- the run ---------------------------------------------------------------

pin(process.pid, LOAD_CPU);
const startedAt = performance.now();
const dir = mkdtempSync(join(tmpdir(), "cidgate-bench-"));

/** Past the deadline or on Ctrl-C: kill what we started and remove the 100 MiB folder. */
async function abort(why: string, code: number) {
  console.error(`bench:gateway: ${why}, stopping everything`);
  for (const c of children) c.kill("SIGKILL");
  await devnet?.stop();
  rmSync(dir, { recursive: true, force: true });
  process.exit(code);
}
let devnet: Awaited<ReturnType<typeof startDevnet>> | undefined;
const deadline = setTimeout(() => void abort(`over ${DEADLINE_MS / 1000} s`, 1), DEADLINE_MS);
process.on("SIGINT", () => void abort("interrupted", 130));
process.on("SIGTERM", () => void abort("terminated", 143));
// One buyer per paid request (and per warm-up one): a buyer who paid once owns the article
// (issue 9) and is served again without settling, so a second purchase would measure nothing.
devnet = await startDevnet({ buyers: PAID_WARM + PAID });
pin(devnet.pid, LOAD_CPU);
const results: string[] = [];
const verdicts: [string, boolean][] = [];

try {
  const contentDir = join(dir, "content");
  mkdirSync(contentDir, { recursive: true });
  writeFileSync(join(contentDir, "article.md"), `# A short article\n\n${"Paid words. ".repeat(300)}\n`);
  const bigPath = join(contentDir, "big.bin");
  const big = randomBytes(BIG_MIB * 1024 * 1024);
  writeFileSync(bigPath, big);
  const bigSize = big.length;

  const startGateway = () =>
    startChild("gateway-server.ts", {
      BENCH_DIR: dir,
      BENCH_RPC_URL: devnet.rpcUrl,
      BENCH_TOKEN: devnet.token,
      BENCH_RELAYER_KEY: devnet.relayer.privateKey,
      BENCH_SELLER: devnet.seller.address,
      LOG_LEVEL: process.env.LOG_LEVEL ?? "info",
    });
  let gw = await startGateway();
  let gwUrl: string = gw.ready.url;
  let control: string = gw.ready.control;
  const cids = gw.ready.cids as Record<string, string>;
  const smallUrl = `${gwUrl}/x402/cid/${cids["article.md"]}`;
  const facilitatorStats = async () =>
    (await (await fetch(`${control}/stats`, { signal: AbortSignal.timeout(5000) })).json()) as {
      verify: number;
      settle: number;
      verifyMs: number[];
      settleMs: number[];
    };
  const indexPeak = memoryKiB(gw.proc.pid);

  // The 402 exactly as cidgate sends it, for the bare server to repeat.
  const first = await fetch(smallUrl, { signal: AbortSignal.timeout(5000) });
  const body402 = await first.text();
  if (first.status !== 402) throw new Error(`cidgate answered ${first.status}, not 402: ${body402}`);
  const headers402: Record<string, string> = {};
  first.headers.forEach((v, k) => {
    if (k !== "date" && k !== "content-length") headers402[k] = v;
  });
  const bare = await startChild("bare-server.ts", {
    BARE_402: JSON.stringify({ headers: headers402, body: body402 }),
    BARE_FILE: bigPath,
    BARE_FILE_TYPE: "application/octet-stream",
  });
  const bareUrl: string = bare.ready.url;
  const bareCheck = await fetch(`${bareUrl}/402`, { signal: AbortSignal.timeout(5000) });
  if (
    bareCheck.status !== 402 ||
    (await bareCheck.text()) !== body402 ||
    bareCheck.headers.get("payment-required") !== headers402["payment-required"]
  ) {
    throw new Error("the bare server does not answer the same 402");
  }

  console.log(
    `cidgate bench: ${SECONDS} s per measure, ${ROUNDS} rounds, servers on CPU ${SERVER_CPU}, wrk + anvil + bench on CPU ${LOAD_CPU}`,
  );
  console.log(
    `cidgate ${gwUrl} (LOG_LEVEL=${process.env.LOG_LEVEL ?? "info"}), bare Bun.serve ${bareUrl}, anvil ${devnet.rpcUrl}`,
  );
  console.log(
    `402: ${Object.keys(headers402).length} headers, ${body402.length} B body, PAYMENT-REQUIRED ${headers402["payment-required"].length} B\n`,
  );

  // 1. The 402 path ----------------------------------------------------------
  const load = (url: string, extra: Partial<Parameters<typeof runWrk>[0]> = {}) =>
    runWrk({ url, connections: CONNECTIONS, seconds: SECONDS, cpu: LOAD_CPU, ...extra });
  await load(smallUrl, { seconds: 2 }); // warm-up: JIT, caches
  await load(`${bareUrl}/402`, { seconds: 2 });
  const rounds402: { gw: WrkResult; bare: WrkResult }[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const g = await load(smallUrl, { serverPid: gw.proc.pid });
    const b = await load(`${bareUrl}/402`, { serverPid: bare.proc.pid });
    expectAll(g, false, "cidgate 402 path");
    expectAll(b, false, "bare 402");
    rounds402.push({ gw: g, bare: b });
    console.log(
      `402 round ${i + 1}: cidgate ${f0(g.rps)} req/s p50 ${f2(g.p50Ms)} ms p99 ${f2(g.p99Ms)} ms ${cpuText(g)} | bare ${f0(b.rps)} req/s p50 ${f2(b.p50Ms)} ms p99 ${f2(b.p99Ms)} ms ${cpuText(b)} | ratio ${pct(g.rps / b.rps)}`,
    );
  }
  const ratio402 = median(rounds402.map((r) => r.gw.rps / r.bare.rps));
  const p99402 = median(rounds402.map((r) => r.gw.p99Ms));
  const cpu402 = median(rounds402.map((r) => r.gw.serverCpuUsPerRequest ?? Number.NaN));
  const cpuBare = median(rounds402.map((r) => r.bare.serverCpuUsPerRequest ?? Number.NaN));
  console.log(
    `402 capacity from server CPU per request (insensitive to other load): cidgate ${f1(cpu402)} us, bare ${f1(cpuBare)} us -> ${pct(cpuBare / cpu402)}`,
  );
  verdicts.push([
    `402 path: ${pct(ratio402)} of bare req/s (target >= ${pct(TARGETS.rpsRatio)}); by CPU per request ${pct(cpuBare / cpu402)}`,
    ratio402 >= TARGETS.rpsRatio,
  ]);
  verdicts.push([
    `402 path: p99 ${f2(p99402)} ms at ${CONNECTIONS} connections (target < ${TARGETS.p99Ms} ms)`,
    p99402 < TARGETS.p99Ms,
  ]);
  results.push(
    `| 402 path, ${CONNECTIONS} conns | ${f0(median(rounds402.map((r) => r.gw.rps)))} req/s, p99 ${f2(p99402)} ms | ${f0(median(rounds402.map((r) => r.bare.rps)))} req/s, p99 ${f2(median(rounds402.map((r) => r.bare.p99Ms)))} ms | ${pct(ratio402)} |`,
    `| 402 path, server CPU per request | ${f1(cpu402)} us | ${f1(cpuBare)} us | ${pct(cpuBare / cpu402)} |`,
  );

  // 2. Forged proofs ---------------------------------------------------------
  // A real buyer's signature over another authorization: well-formed, right
  // price, payee and time window, so only the signature check can refuse it.
  const offer = await offerOf(await fetch(smallUrl, { signal: AbortSignal.timeout(5000) }));
  const forger = privateKeyToAccount(devnet.buyers[0].privateKey);
  const stolenSignature = await sign(forger, offer, authorizationFor(offer, forger.address));
  const forgedFile = join(dir, "forged.txt");
  const forgedV1: string[] = [];
  const forgedV2: string[] = [];
  for (let i = 0; i < FORGED; i++) {
    forgedV1.push(proofHeader(1, offer, stolenSignature, authorizationFor(offer, forger.address))[1]);
    forgedV2.push(proofHeader(2, offer, stolenSignature, authorizationFor(offer, forger.address))[1]);
  }
  // wrk sends one header name per run: v1 proofs in X-PAYMENT, v2 in PAYMENT-SIGNATURE.
  const check = await fetch(smallUrl, { headers: { "X-PAYMENT": forgedV1[0] }, signal: AbortSignal.timeout(5000) });
  const checkBody = (await check.json()) as { error?: string; reason?: string };
  if (check.status !== 403) throw new Error(`a forged proof got ${check.status}, not 403`);
  // Only the signature check may refuse it: any other reason means the measure measures something else.
  if ((checkBody.reason ?? checkBody.error) !== "invalid_exact_evm_signature")
    throw new Error(`a forged proof was refused for ${checkBody.reason ?? checkBody.error}, not its signature`);
  console.log(`\nforged proof -> 403 ${checkBody.reason ?? checkBody.error}`);
  const before = await facilitatorStats();
  const forgedRounds: WrkResult[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const v2 = i % 2 === 1;
    writeFileSync(forgedFile, (v2 ? forgedV2 : forgedV1).join("\n"));
    const r = await load(smallUrl, {
      rotate: { header: v2 ? "PAYMENT-SIGNATURE" : "X-PAYMENT", file: forgedFile },
      serverPid: gw.proc.pid,
    });
    expectOnly(r, 403, "forged proofs");
    forgedRounds.push(r);
    console.log(
      `forged round ${i + 1} (${v2 ? "v2" : "v1"}, ${f0(FORGED)} distinct proofs): ${f0(r.rps)} rejections/s, p50 ${f2(r.p50Ms)} ms p99 ${f2(r.p99Ms)} ms ${cpuText(r)}, ${statusLine(r)}`,
    );
  }
  const after = await facilitatorStats();
  const facilitatorCalls = after.verify - before.verify + (after.settle - before.settle);
  const forgedTotal = forgedRounds.reduce((a, r) => a + r.requests, 0);
  const forgedRps = median(forgedRounds.map((r) => r.rps));
  const forgedCpu = median(forgedRounds.map((r) => r.serverCpuUsPerRequest ?? Number.NaN));
  console.log(
    `facilitator calls during ${f0(forgedTotal)} forged requests: ${facilitatorCalls}; one core's capacity by CPU per rejection: ${f0(1e6 / forgedCpu)}/s`,
  );
  verdicts.push([
    `forged proofs: ${f0(forgedRps)} rejections/s (target >= ${f0(TARGETS.forgedPerSecond)})`,
    forgedRps >= TARGETS.forgedPerSecond,
  ]);
  verdicts.push([
    `forged proofs: ${facilitatorCalls} facilitator calls in ${f0(forgedTotal)} requests (target 0)`,
    facilitatorCalls === 0,
  ]);
  results.push(
    `| forged proofs (bad signature), ${CONNECTIONS} conns | ${f0(forgedRps)} rejections/s, p99 ${f2(median(forgedRounds.map((r) => r.p99Ms)))} ms, ${f0(forgedCpu)} us CPU each, ${facilitatorCalls} facilitator calls in ${f0(forgedTotal)} | — | — |`,
  );

  // 4. The paid request, end to end on the local chain -------------------------
  const buyers = devnet.buyers.map((b) => privateKeyToAccount(b.privateKey));
  /** One GET of the article with a proof header, timed to the last byte; anything but a 200 stops the bench. */
  const timedGet = async (headerPair: [string, string], what: string) => {
    const t = performance.now();
    const res = await fetch(smallUrl, {
      headers: { [headerPair[0]]: headerPair[1] },
      signal: AbortSignal.timeout(30_000),
    });
    await res.arrayBuffer();
    const ms = performance.now() - t;
    if (res.status !== 200) throw new Error(`${what} got ${res.status}`);
    return { ms, res };
  };
  const payOnce = async (headerPair: [string, string]) => (await timedGet(headerPair, "a paid request")).ms;
  const warm = await Promise.all(
    Array.from({ length: PAID_WARM }, (_, i) => paidProof(i % 2 ? 2 : 1, buyers[i], offer)),
  );
  for (const h of warm) await payOnce(h);
  const proofs = await Promise.all(
    Array.from({ length: PAID }, (_, i) => paidProof(i % 2 ? 2 : 1, buyers[PAID_WARM + i], offer)),
  );
  const statsBeforePaid = await facilitatorStats();
  const totals: number[] = [];
  for (const h of proofs) totals.push(await payOnce(h));
  const statsAfterPaid = await facilitatorStats();
  const verifyMs = statsAfterPaid.verifyMs.slice(statsBeforePaid.verifyMs.length);
  const settleMs = statsAfterPaid.settleMs.slice(statsBeforePaid.settleMs.length);
  if (verifyMs.length !== PAID || settleMs.length !== PAID) {
    throw new Error(`expected ${PAID} verify and settle calls, saw ${verifyMs.length} and ${settleMs.length}`);
  }
  const facilitatorMs = totals.map((_, i) => verifyMs[i] + settleMs[i]);
  const share = totals.map((t, i) => t - facilitatorMs[i]);
  // The same client's round trip to the bare 402: the loopback HTTP floor inside `share`.
  const floor: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t = performance.now();
    await (await fetch(`${bareUrl}/402`)).arrayBuffer();
    floor.push(performance.now() - t);
  }
  console.log(
    `\npaid request (${PAID} sequential, v1+v2, fresh authorization each, settled on anvil): total p50 ${f2(median(totals))} ms p99 ${f2(percentile(totals, 99))} ms`,
  );
  console.log(
    `  facilitator verify p50 ${f2(median(verifyMs))} ms + settle p50 ${f2(median(settleMs))} ms; gateway share p50 ${f2(median(share))} ms p99 ${f2(percentile(share, 99))} ms (of which client<->server loopback HTTP ~${f2(median(floor))} ms)`,
  );
  verdicts.push([
    `paid request: gateway share p50 ${f2(median(share))} ms (target < ${TARGETS.gatewayShareP50Ms} ms)`,
    median(share) < TARGETS.gatewayShareP50Ms,
  ]);
  results.push(
    `| paid request end to end (${PAID}, sequential) | total p50 ${f2(median(totals))} ms, p99 ${f2(percentile(totals, 99))} ms; facilitator p50 ${f2(median(facilitatorMs))} ms; **gateway share p50 ${f2(median(share))} ms**, p99 ${f2(percentile(share, 99))} ms | loopback HTTP round trip p50 ${f2(median(floor))} ms | — |`,
  );

  // 5. Entitled re-download: a fresh authorization from a buyer who paid ------
  // buyers[0] paid for the article above (an entitlement, policy `forever`). A
  // stock x402 client signs a new authorization at every 402: each is served on
  // the entitlement, never settled. No facilitator time to subtract: the total
  // is the gateway's share (plus the loopback round trip, as above).
  const chain = createPublicClient({ transport: http(devnet.rpcUrl) });
  const sellerBalance = () =>
    chain.readContract({
      address: devnet.token,
      abi: erc20Abi,
      functionName: "balanceOf",
      args: [devnet.seller.address],
    });
  const entitledBuyer = buyers[0];
  const entitledOnce = async (headerPair: [string, string]) => {
    const { ms, res } = await timedGet(headerPair, "an entitled re-download");
    if (!res.headers.get("x-access-token")) throw new Error("an entitled re-download carried no X-Access-Token");
    return ms;
  };
  const entitledWarm = await Promise.all(
    Array.from({ length: 10 }, (_, i) => paidProof(i % 2 ? 2 : 1, entitledBuyer, offer)),
  );
  const entitledProofs = await Promise.all(
    Array.from({ length: ENTITLED }, (_, i) => paidProof(i % 2 ? 2 : 1, entitledBuyer, offer)),
  );
  const balanceBeforeEntitled = await sellerBalance();
  const statsBeforeEntitled = await facilitatorStats();
  for (const h of entitledWarm) await entitledOnce(h);
  const entitledMs: number[] = [];
  for (const h of entitledProofs) entitledMs.push(await entitledOnce(h));
  const statsAfterEntitled = await facilitatorStats();
  const balanceAfterEntitled = await sellerBalance();
  const entitledCalls =
    statsAfterEntitled.verify - statsBeforeEntitled.verify + (statsAfterEntitled.settle - statsBeforeEntitled.settle);
  const entitledRequests = entitledWarm.length + ENTITLED;
  const balanceMoved = balanceAfterEntitled - balanceBeforeEntitled;
  console.log(
    `\nentitled re-download (${ENTITLED} sequential after ${entitledWarm.length} warm-up, v1+v2, a fresh authorization each from a buyer who paid): total = gateway share p50 ${f2(median(entitledMs))} ms p99 ${f2(percentile(entitledMs, 99))} ms (of which loopback HTTP ~${f2(median(floor))} ms)`,
  );
  console.log(
    `  facilitator calls during the ${entitledRequests} requests: ${entitledCalls}; seller balance ${balanceBeforeEntitled} -> ${balanceAfterEntitled} (moved ${balanceMoved})`,
  );
  verdicts.push([
    `entitled re-download: gateway share p50 ${f2(median(entitledMs))} ms (target < ${TARGETS.entitledShareP50Ms} ms)`,
    median(entitledMs) < TARGETS.entitledShareP50Ms,
  ]);
  verdicts.push([
    `entitled re-download: ${entitledCalls} facilitator calls in ${entitledRequests} requests, seller balance moved by ${balanceMoved} (target 0 and 0)`,
    entitledCalls === 0 && balanceMoved === 0n,
  ]);
  results.push(
    `| entitled re-download (${ENTITLED}, sequential, fresh authorization each) | **total = gateway share p50 ${f2(median(entitledMs))} ms**, p99 ${f2(percentile(entitledMs, 99))} ms; ${entitledCalls} facilitator calls in ${entitledRequests}; seller balance moved ${balanceMoved} | loopback HTTP round trip p50 ${f2(median(floor))} ms | — |`,
  );

  // 6. SIGN-IN-WITH-X checks ---------------------------------------------------
  // The challenge of a fresh 402 (its nonce is one per resource and minute, and
  // good for 5 minutes). A nonce is accepted once per address, so every header
  // comes from its own wallet, entitled to the article by hand (POST /grant on
  // the control server: the entitlements store, as the management API grants).
  const siwxOffer = await offerOf(await fetch(smallUrl, { signal: AbortSignal.timeout(5000) }));
  const siwxInfo = siwxOffer.siwx;
  if (!siwxInfo) throw new Error("the v2 402 advertises no sign-in-with-x challenge");
  const signInOnce = async (header: string) => {
    const res = await fetch(smallUrl, { headers: { "SIGN-IN-WITH-X": header }, signal: AbortSignal.timeout(5000) });
    const body = await res.text();
    return { status: res.status, body };
  };
  // With the real client helper (@x402/extensions' createSIWxPayload): the buyer who paid, a stranger, a replay.
  const byClient = await siwxHeaderByClient(siwxInfo, buyers[1]);
  const asBuyer = await signInOnce(byClient);
  const replayed = await signInOnce(byClient);
  const asStranger = await signInOnce(await siwxHeaderByClient(siwxInfo, privateKeyToAccount(generatePrivateKey())));
  if (asBuyer.status !== 200 || asStranger.status !== 402 || replayed.status !== 403) {
    throw new Error(
      `sign-in checks: buyer ${asBuyer.status}, stranger ${asStranger.status}, replay ${replayed.status} (want 200, 402, 403): ${replayed.body}`,
    );
  }
  console.log(
    `\nsign-in with the @x402/extensions client: paid buyer -> 200, stranger -> 402, replay -> 403 ${(JSON.parse(replayed.body) as { reason?: string }).reason ?? ""}`,
  );
  const siwxCount = SIWX_WARM + ROUNDS * SIWX_PER_ROUND;
  const signedAt = performance.now();
  const wallets = await siwxHeaders(siwxInfo, siwxCount);
  const signMs = performance.now() - signedAt;
  const grantedAt = performance.now();
  for (let i = 0; i < wallets.addresses.length; i += 5000) {
    const res = await fetch(`${control}/grant`, {
      method: "POST",
      body: JSON.stringify({ cid: cids["article.md"], payers: wallets.addresses.slice(i, i + 5000) }),
      signal: AbortSignal.timeout(60_000),
    });
    if (res.status !== 200) throw new Error(`granting entitlements failed: ${res.status} ${await res.text()}`);
  }
  console.log(
    `${f0(siwxCount)} wallets: signed one header each in ${f1(signMs / 1000)} s, entitled to the article in ${f1((performance.now() - grantedAt) / 1000)} s`,
  );
  /** Sends each header once, `SIWX_CONNECTIONS` in flight, from this process (CPU 1); statuses counted. */
  const siwxRound = async (headers: string[]) => {
    const statuses: Record<number, number> = {};
    const latency: number[] = [];
    let next = 0;
    const cpuBefore = cpuMs(gw.proc.pid);
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: SIWX_CONNECTIONS }, async () => {
        while (next < headers.length) {
          const header = headers[next++];
          const t = performance.now();
          const res = await fetch(smallUrl, {
            headers: { "SIGN-IN-WITH-X": header },
            signal: AbortSignal.timeout(30_000),
          });
          await res.arrayBuffer();
          latency.push(performance.now() - t);
          statuses[res.status] = (statuses[res.status] ?? 0) + 1;
        }
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    const cpuAfter = cpuMs(gw.proc.pid);
    const cpuUs =
      cpuBefore === undefined || cpuAfter === undefined ? Number.NaN : ((cpuAfter - cpuBefore) * 1000) / headers.length;
    return { statuses, rps: headers.length / seconds, p50Ms: median(latency), p99Ms: percentile(latency, 99), cpuUs };
  };
  const siwxStatusLine = (st: Record<number, number>) =>
    Object.entries(st)
      .map(([k, n]) => `${k}x${n}`)
      .join(" ");
  const statsBeforeSiwx = await facilitatorStats();
  const siwxWarm = await siwxRound(wallets.headers.slice(0, SIWX_WARM));
  if (siwxWarm.statuses[200] !== SIWX_WARM) throw new Error(`sign-in warm-up: ${siwxStatusLine(siwxWarm.statuses)}`);
  const siwxRounds: Awaited<ReturnType<typeof siwxRound>>[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const from = SIWX_WARM + i * SIWX_PER_ROUND;
    const r = await siwxRound(wallets.headers.slice(from, from + SIWX_PER_ROUND));
    if (r.statuses[200] !== SIWX_PER_ROUND)
      throw new Error(`sign-in round ${i + 1}: expected only 200, got ${siwxStatusLine(r.statuses)}`);
    siwxRounds.push(r);
    console.log(
      `sign-in round ${i + 1} (${f0(SIWX_PER_ROUND)} wallets, ${SIWX_CONNECTIONS} in flight): ${f0(r.rps)} accepted/s, p50 ${f2(r.p50Ms)} ms p99 ${f2(r.p99Ms)} ms (server CPU ${f1(r.cpuUs)} us/check -> ${f0(1e6 / r.cpuUs)}/s on one core), ${siwxStatusLine(r.statuses)}`,
    );
  }
  const statsAfterSiwx = await facilitatorStats();
  const siwxCalls = statsAfterSiwx.verify - statsBeforeSiwx.verify + (statsAfterSiwx.settle - statsBeforeSiwx.settle);
  const siwxRps = median(siwxRounds.map((r) => r.rps));
  const siwxCpu = median(siwxRounds.map((r) => r.cpuUs));
  console.log(
    `facilitator calls during ${f0(siwxCount)} sign-ins: ${siwxCalls}; one core's capacity by CPU per check: ${f0(1e6 / siwxCpu)}/s`,
  );
  verdicts.push([
    `SIWX checks: ${f0(1e6 / siwxCpu)}/s on one core by CPU per check (${f0(siwxCpu)} us), ${f0(siwxRps)} accepted/s measured, all 200 (target >= ${f0(TARGETS.siwxPerSecond)}/s)`,
    1e6 / siwxCpu >= TARGETS.siwxPerSecond,
  ]);
  results.push(
    `| SIGN-IN-WITH-X checks (${f0(SIWX_PER_ROUND)} wallets per round, ${SIWX_CONNECTIONS} in flight, Bun client) | ${f0(siwxRps)} accepted/s (all 200), p99 ${f2(median(siwxRounds.map((r) => r.p99Ms)))} ms, ${f0(siwxCpu)} us CPU each = **${f0(1e6 / siwxCpu)}/s on one core**, ${siwxCalls} facilitator calls | — | — |`,
  );

  // 3. 100 MiB paid download vs Bun.file -------------------------------------
  // In a fresh cidgate process over the same database and folder (nothing is
  // hashed again), so its peak RSS belongs to the downloads, not to the
  // tens of thousands of requests before. The old process's figure is printed too.
  const usedMem = memoryKiB(gw.proc.pid);
  console.log(
    `\ncidgate RSS after the phases above: ${mib(usedMem.rss)} (peak ${mib(usedMem.hwm)}); restarting it for the downloads`,
  );
  await stopChild(gw.proc);
  gw = await startGateway();
  gwUrl = gw.ready.url;
  control = gw.ready.control;
  const bigUrl = `${gwUrl}/x402/cid/${cids["big.bin"]}`;
  const bigOffer = await offerOf(await fetch(bigUrl, { signal: AbortSignal.timeout(5000) }));
  const bigProof = await paidProof(1, buyers[0], bigOffer);
  const firstDownload = performance.now();
  const paid = await fetch(bigUrl, { headers: { [bigProof[0]]: bigProof[1] }, signal: AbortSignal.timeout(60_000) });
  const got = new Uint8Array(await paid.arrayBuffer());
  const firstMs = performance.now() - firstDownload;
  if (paid.status !== 200 || got.length !== bigSize || Buffer.compare(got, big) !== 0) {
    throw new Error(`the paid 100 MiB download failed: ${paid.status}, ${got.length} bytes`);
  }
  console.log(`100 MiB paid download (pay + settle + transfer, one client): ${f0(firstMs)} ms, bytes identical`);
  // The rest re-present the settled proof (served again, no new charge): pure transfer.
  const chargesBefore = (await facilitatorStats()).settle;
  const gwBefore = memoryKiB(gw.proc.pid);
  const peaksReset = resetPeak(gw.proc.pid) && resetPeak(bare.proc.pid);
  const downloadRounds: { gw: WrkResult; bare: WrkResult }[] = [];
  const dl = (url: string, headers?: Record<string, string>) =>
    runWrk({ url, connections: DOWNLOAD_CONNECTIONS, seconds: SECONDS, cpu: LOAD_CPU, headers, timeoutSeconds: 60 });
  for (let i = 0; i < ROUNDS; i++) {
    const g = await dl(bigUrl, { [bigProof[0]]: bigProof[1] });
    const b = await dl(`${bareUrl}/file`);
    expectAll(g, true, "paid download");
    expectAll(b, true, "bare Bun.file");
    downloadRounds.push({ gw: g, bare: b });
    console.log(
      `download round ${i + 1} (${DOWNLOAD_CONNECTIONS} conns): cidgate ${gbps(g.bytesPerSecond)} | bare Bun.file ${gbps(b.bytesPerSecond)} | ratio ${pct(g.bytesPerSecond / b.bytesPerSecond)}`,
    );
  }
  const gwMem = memoryKiB(gw.proc.pid);
  const bareMem = memoryKiB(bare.proc.pid);
  const newCharges = (await facilitatorStats()).settle - chargesBefore;
  if (newCharges !== 0) throw new Error(`re-presented proof was charged again ${newCharges} times`);
  const dlRatio = median(downloadRounds.map((r) => r.gw.bytesPerSecond / r.bare.bytesPerSecond));
  console.log(
    `peak RSS during downloads${peaksReset ? "" : " (could not reset VmHWM: lifetime peak)"}: cidgate ${mib(gwMem.hwm)} (RSS ${mib(gwBefore.rss)} before them, ${mib(gwBefore.hwm)} peak from its start to then), bare ${mib(bareMem.hwm)}. First cidgate process: ${mib(indexPeak.hwm)} peak while indexing the 100 MiB file at start`,
  );
  verdicts.push([
    `100 MiB download: ${pct(dlRatio)} of Bun.file throughput (target >= ${pct(TARGETS.downloadRatio)})`,
    dlRatio >= TARGETS.downloadRatio,
  ]);
  verdicts.push([
    `100 MiB download: server peak RSS ${mib(gwMem.hwm)} (target < ${TARGETS.rssMiB} MiB)`,
    gwMem.hwm / 1024 < TARGETS.rssMiB,
  ]);
  results.push(
    `| 100 MiB paid download, ${DOWNLOAD_CONNECTIONS} conns | ${gbps(median(downloadRounds.map((r) => r.gw.bytesPerSecond)))}, peak RSS ${mib(gwMem.hwm)} (${mib(gwBefore.rss)} before) | ${gbps(median(downloadRounds.map((r) => r.bare.bytesPerSecond)))}, peak RSS ${mib(bareMem.hwm)} | ${pct(dlRatio)} |`,
  );

  // 7. The same download with the buyer's access token -------------------------
  // The token the paid 100 MiB answer carried (X-Access-Token), sent back as
  // `Authorization: Bearer`: each use checks the token and the entitlement.
  const accessToken = paid.headers.get("x-access-token");
  if (!accessToken) throw new Error("the paid 100 MiB download carried no X-Access-Token");
  const bearer = { Authorization: `Bearer ${accessToken}` };
  const ranged = await fetch(bigUrl, {
    headers: { ...bearer, Range: "bytes=0-1023" },
    signal: AbortSignal.timeout(5000),
  });
  const rangedBytes = new Uint8Array(await ranged.arrayBuffer());
  if (ranged.status !== 206 || Buffer.compare(rangedBytes, big.subarray(0, 1024)) !== 0) {
    throw new Error(`the access token with Range got ${ranged.status}, ${rangedBytes.length} bytes`);
  }
  console.log(`access token (${accessToken.length} B) with Range -> 206, bytes identical`);
  const tokenRounds: { gw: WrkResult; bare: WrkResult }[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const g = await dl(bigUrl, bearer);
    const b = await dl(`${bareUrl}/file`);
    expectAll(g, true, "token download");
    expectAll(b, true, "bare Bun.file");
    tokenRounds.push({ gw: g, bare: b });
    console.log(
      `token download round ${i + 1} (${DOWNLOAD_CONNECTIONS} conns): cidgate ${gbps(g.bytesPerSecond)} | bare Bun.file ${gbps(b.bytesPerSecond)} | ratio ${pct(g.bytesPerSecond / b.bytesPerSecond)}`,
    );
  }
  const tokenCharges = (await facilitatorStats()).settle - chargesBefore;
  if (tokenCharges !== 0) throw new Error(`token downloads were charged ${tokenCharges} times`);
  const tokenRatio = median(tokenRounds.map((r) => r.gw.bytesPerSecond / r.bare.bytesPerSecond));
  verdicts.push([
    `100 MiB token download: ${pct(tokenRatio)} of Bun.file throughput (target >= ${pct(TARGETS.tokenDownloadRatio)})`,
    tokenRatio >= TARGETS.tokenDownloadRatio,
  ]);
  results.push(
    `| 100 MiB token download (Bearer), ${DOWNLOAD_CONNECTIONS} conns | ${gbps(median(tokenRounds.map((r) => r.gw.bytesPerSecond)))} | ${gbps(median(tokenRounds.map((r) => r.bare.bytesPerSecond)))} | ${pct(tokenRatio)} |`,
  );

  await stopChild(bare.proc);
  await stopChild(gw.proc);

  console.log(
    `\n| measure (median of ${ROUNDS} rounds) | cidgate | bare Bun.serve | ratio |\n|---|---|---|---|\n${results.join("\n")}`,
  );
  console.log("\ntargets:");
  for (const [what, ok] of verdicts) console.log(`  ${verdict(ok).padEnd(7)} ${what}`);
  console.log(`\nbench:gateway took ${f0((performance.now() - startedAt) / 1000)} s`);
} finally {
  for (const c of [...children]) await stopChild(c);
  await devnet.stop();
  rmSync(dir, { recursive: true, force: true });
  clearTimeout(deadline);
}
