/**
 * What the gateway's own code costs per SIGN-IN-WITH-X check and per paid
 * request, in process, without HTTP and without the chain: the CPU time of
 * the handler alone. bench/gateway.ts measures the same requests end to end
 * over HTTP; on a shared machine its figures move with the load, so this one
 * is for comparing two versions of the code in the same minutes (run each in
 * turn, several times, pinned with taskset).
 *
 *   npx bun bench/entitlements-cost.ts prepare DIR [SIGNINS] [PAID]
 *     A content folder and database in DIR (WAL, as production), one priced
 *     article, SIGNINS wallets entitled to it by hand, each with one
 *     SIGN-IN-WITH-X header over the current challenge, and PAID fresh
 *     authorizations from new buyers (v1 and v2 alternating). Defaults 1000, 200.
 *     Sign-ins are good for 5 minutes (the challenge's age): run soon after.
 *   npx bun bench/entitlements-cost.ts run DIR SIGNINS PAID [WARM]
 *     Composes the app over DIR (composeApp, as the server does), sends WARM
 *     sign-ins untimed (default 0: the JIT's work counted too), then sends
 *     the next SIGNINS sign-ins to the gateway handler, 32 in flight (as
 *     bench/gateway.ts does; sign-ins arriving together share a nonce
 *     commit), every answer checked 200, then the first PAID authorizations
 *     one at a time, every answer checked 200 with an access token. Prints
 *     the CPU time per check and per paid request, and the paid requests'
 *     median wall time (the handler's, stub facilitator included: ~0). A run spends what it
 *     sends: copy DIR (`cp -a`, which keeps the files' mtimes) for each run.
 *
 * The facilitator here is a stub that answers "valid" and "settled" at once
 * and counts its calls: the paid figure is the gateway's share only (claim,
 * checks, settle-and-grant transaction, token, answer), which is what
 * bench/gateway.ts reports as "gateway share" after subtracting the
 * facilitator's time. Paid requests are not warmed: in production, as in
 * bench/gateway.ts, each is a new buyer's first and rare, so cold code counts.
 * (valgrind's instruction counts would not depend on the load, but under
 * this machine's load a run outlived the sign-ins' 5 minutes.)
 *
 * docs/BENCHMARKS.md "Entitlements (issue 9)" has the figures.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { getAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { composeApp } from "../src/app";
import { openDb } from "../src/db/client";
import type { Facilitator } from "../src/facilitator/types";
import { createLogger } from "../src/http/logging";
import { loadSettings } from "../src/settings";
import { createStores } from "../src/stores";
import { offerOf, paidProof, siwxHeaders } from "./lib/proofs";

const [mode, dir, signInArg, paidArg, warmArg] = process.argv.slice(2);
if ((mode !== "prepare" && mode !== "run") || !dir) {
  console.error("usage: bench/entitlements-cost.ts prepare|run DIR [SIGNINS] [PAID]");
  process.exit(2);
}
const SECRET = "bench-secret-bench-secret-bench-secret-01";
const SELLER = getAddress("0x1111111111111111111111111111111111111111");
const ASSET = getAddress("0x036CbD53842c5426634e7929541eC2318f3dCF7e");
const TX = `0x${"ab".repeat(32)}`;

const settings = loadSettings({
  CIDGATE_DB: join(dir, "cidgate.db"),
  PUBLIC_URL: "http://127.0.0.1:8080",
  CIDGATE_CONTENT_DIR: join(dir, "content"),
  CIDGATE_CONFIG_DIR: join(dir, "config"),
  // Authorizations signed at `prepare` must still be current when a slow (valgrind) run reaches them.
  MAX_TIMEOUT_SECONDS: "900",
});
const db = openDb(settings.db);
const stores = createStores(db, settings);
const calls = { verify: 0, settle: 0 };
/** A stub, not a facilitator: every proof valid and settled at once (the chain's share is not measured here). */
const stub: Facilitator = {
  verify: async () => (calls.verify++, { isValid: true }),
  settle: async (r) => (calls.settle++, { success: true, transaction: TX, network: r.paymentRequirements.network }),
  supported: async () => ({ kinds: [] }),
};
const { gateway } = composeApp({
  settings,
  db,
  stores,
  log: createLogger("silent"),
  jwtSecret: SECRET,
  facilitator: stub,
});
const cidOf = () => db.sqlite.query<{ cid: string }, []>("SELECT cid FROM content_files").get()?.cid ?? "";
const urlOf = (cid: string) => `${settings.publicUrl}/x402/cid/${cid}`;

if (mode === "prepare") {
  const signIns = Number(signInArg ?? 1000);
  const paid = Number(paidArg ?? 200);
  mkdirSync(settings.contentDir, { recursive: true });
  writeFileSync(join(settings.contentDir, "article.md"), `# A short article\n\n${"Paid words. ".repeat(300)}\n`);
  await stores.content.index();
  const cid = cidOf();
  const instruction = stores.instructions.create({
    name: "Access fee",
    description: "Access fee",
    requirements: [{ network: "base-sepolia", asset: ASSET, pay_to: SELLER, amount: "10000" }],
  });
  stores.instructions.attachCid(instruction.id, cid);
  const offer = await offerOf(await gateway(new Request(urlOf(cid)), cid, false));
  if (!offer.siwx) throw new Error("the 402 carries no sign-in challenge");
  const wallets = await siwxHeaders(offer.siwx, signIns);
  const now = Math.floor(Date.now() / 1000);
  db.sqlite.transaction(() => {
    for (const payer of wallets.addresses)
      stores.entitlements.grant({ payer, cid, instructionId: instruction.id }, now);
  })();
  const proofs: [string, string][] = [];
  for (let i = 0; i < paid; i++)
    proofs.push(await paidProof(i % 2 ? 2 : 1, privateKeyToAccount(generatePrivateKey()), offer));
  writeFileSync(join(dir, "requests.json"), JSON.stringify({ cid, signIns: wallets.headers, proofs }));
  db.sqlite.close();
  console.log(`prepared ${signIns} sign-ins and ${paid} paid requests in ${dir}`);
} else {
  const { cid, signIns, proofs } = JSON.parse(readFileSync(join(dir, "requests.json"), "utf8")) as {
    cid: string;
    signIns: string[];
    proofs: [string, string][];
  };
  const url = urlOf(cid);
  const cpu = () => {
    const u = process.cpuUsage();
    return u.user + u.system;
  };
  const expect200 = async (res: Response, what: string) => {
    if (res.status !== 200 || !res.headers.get("x-access-token"))
      throw new Error(`${what}: ${res.status} ${await res.text()}`);
  };

  /** Sends each header once, 32 in flight; the CPU time per check. */
  const signInRound = async (headers: string[]) => {
    let next = 0;
    const c0 = cpu();
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < headers.length) {
          const header = headers[next++];
          const res = await gateway(new Request(url, { headers: { "SIGN-IN-WITH-X": header } }), cid, false);
          await expect200(res, "sign-in");
        }
      }),
    );
    return (cpu() - c0) / headers.length;
  };
  const warm = Number(warmArg ?? 0);
  if (warm > 0) await signInRound(signIns.slice(0, warm));
  const signInCount = Number(signInArg ?? 0);
  if (signInCount > 0) {
    const perCheck = await signInRound(signIns.slice(warm, warm + signInCount));
    console.log(`sign-in checks: ${signInCount} after ${warm} warm-up, CPU ${perCheck.toFixed(1)} us each`);
  }
  const paidCount = Number(paidArg ?? 0);
  if (paidCount > 0) {
    const walls: number[] = [];
    const c0 = cpu();
    for (const [name, value] of proofs.slice(0, paidCount)) {
      const t = performance.now();
      await expect200(await gateway(new Request(url, { headers: { [name]: value } }), cid, false), "paid request");
      walls.push(performance.now() - t);
    }
    const perRequest = (cpu() - c0) / paidCount;
    const p50 = walls.sort((a, b) => a - b)[walls.length >> 1];
    console.log(`paid requests: ${paidCount}, CPU ${perRequest.toFixed(1)} us each, wall p50 ${p50.toFixed(3)} ms`);
    if (calls.settle !== paidCount) throw new Error(`expected ${paidCount} settlements, saw ${calls.settle}`);
  }
  db.sqlite.close();
}
