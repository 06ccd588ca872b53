/**
 * Operators resolve a pending payment (issue 10, item 11):
 * POST /v3/x402/payments/{id}/resolve and `cidgate payments resolve <id>`,
 * with and without an RPC; and the background reconciliation on its timer.
 * Real devnet and real facilitator; the FAULT INJECTOR (chaos/fault-proxy.ts)
 * loses settle answers (`drop`: the money moved) or settles (`blackhole`: it never left).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import {
  buy,
  buyerOf,
  CHAOS_JWT_SECRET,
  type ChaosChain,
  type ChaosGateway,
  proofFor,
  rowOf,
  startChaosChain,
  startChaosGateway,
} from "../../chaos/stack";
import { composeApp } from "../../src/app";
import { createToken } from "../../src/http/auth";
import { createLogger } from "../../src/http/logging";
import { eventually } from "../support/eventually";

const FILE = "resolved by hand\n";
const ROOT = join(import.meta.dir, "../..");

let chain: ChaosChain;
let gw: ChaosGateway; // without an RPC: settlements on the facilitator's word
let writeToken: string;
let readToken: string;

beforeAll(async () => {
  chain = await startChaosChain(7);
  gw = await startChaosGateway(chain, {
    rpc: false,
    dbFile: true,
    files: { "file.txt": FILE },
    env: { FACILITATOR_TIMEOUT_MS: "1500" },
  });
  writeToken = await createToken(CHAOS_JWT_SECRET, { scopes: ["read", "write"], ttlSeconds: 600, subject: "ops" });
  readToken = await createToken(CHAOS_JWT_SECRET, { scopes: ["read"], ttlSeconds: 600 });
});
afterAll(async () => {
  await gw?.stop();
  await chain?.stop();
});

const cid = () => gw.cids["file.txt"];

/** A purchase whose settle answer is lost (`drop`: settled on chain) or never sent (`blackhole`): its row id. */
async function leavePending(i: number, mode: "drop" | "blackhole") {
  const p = await proofFor(chain, i);
  const settled = chain.proxy.settled.length;
  chain.proxy.mode = mode;
  const res = await buy(gw.url, cid(), p.header).finally(() => (chain.proxy.mode = "pass"));
  expect(res.status).toBe(500);
  const row = rowOf(gw.db, buyerOf(chain, i).address, p.nonce)!;
  expect(row.state).toBe("pending");
  return { id: row.id, proof: p, tx: mode === "drop" ? chain.proxy.settled[settled] : undefined };
}

function resolve(id: number, body?: unknown, token = writeToken, app?: { handle(r: Request): Promise<Response> }) {
  const request = new Request(`${gw.url}/v3/x402/payments/${id}/resolve`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return app ? app.handle(request) : fetch(request);
}

const audit = (paymentId: number) =>
  gw.db.sqlite
    .query<Record<string, unknown>, [number]>(
      "SELECT action, outcome, basis, tx_hash AS tx, actor FROM payment_resolutions WHERE payment_id = ?",
    )
    .all(paymentId);

function cli(args: string[], rpc: boolean) {
  const env: Record<string, string> = { ...(process.env as Record<string, string>), CIDGATE_DB: gw.settings.db };
  delete env.RPC_URL;
  env.LOG_LEVEL = "silent";
  if (rpc) env.RPC_URL = chain.devnet.rpcUrl;
  const run = Bun.spawnSync([process.execPath, "src/cli/main.ts", "payments", "resolve", ...args], {
    cwd: ROOT,
    env,
  });
  return { code: run.exitCode, out: run.stdout.toString(), err: run.stderr.toString() };
}

describe("POST /v3/x402/payments/{id}/resolve without an RPC", () => {
  test("the server says at start that settlements are taken on the facilitator's word", () => {
    expect(gw.logLines.some((l) => l.includes("settlements are taken on the facilitator's word"))).toBe(true);
  });

  test("a lost answer: check is refused (the chain cannot be read), settle with the tx settles it and grants access", async () => {
    const { id, proof, tx } = await leavePending(0, "drop");
    const checked = await resolve(id);
    expect(checked.status).toBe(409);
    expect(((await checked.json()) as any).error.message).toContain(
      "settle it with its transaction hash, or release it",
    );
    expect((await resolve(id, { action: "settle", transaction: tx }, readToken)).status).toBe(403);
    expect((await resolve(id, { action: "settle", transaction: "0x12" })).status).toBe(400);
    expect((await gw.stores.payments.get(id))!.state).toBe("pending"); // bad requests changed nothing

    const res = await resolve(id, { action: "settle", transaction: tx, note: "seen on the explorer" });
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as any;
    expect(data.payment).toMatchObject({ id, state: "settled", transaction: tx });
    expect(data.resolution).toMatchObject({ action: "settle", outcome: "settled", basis: "operator", transaction: tx });
    expect(data.resolution.actor).toStartWith("api:ops/");
    expect(audit(id)).toEqual([expect.objectContaining({ action: "settle", outcome: "settled", basis: "operator" })]);
    // The buyer is served: the same proof again, as a paid proof.
    const again = await buy(gw.url, cid(), proof.header);
    expect(again.status).toBe(200);
    expect(again.text).toBe(FILE);
    expect((await resolve(id, { action: "release" })).status).toBe(409); // settled stays settled
    expect((await resolve(999_999)).status).toBe(404);
  }, 30_000);

  test("a settle that never left: release frees the authorization, and the same proof then pays once", async () => {
    const { id, proof } = await leavePending(1, "blackhole");
    const res = await resolve(id, { action: "release" });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).data.payment.state).toBe("failed");
    expect(audit(id)).toEqual([expect.objectContaining({ action: "release", outcome: "failed", basis: "operator" })]);
    const settledBefore = chain.proxy.settled.length;
    const paid = await buy(gw.url, cid(), proof.header);
    expect(paid.status).toBe(200);
    expect(chain.proxy.settled.length).toBe(settledBefore + 1);
  }, 30_000);
});

describe("with an RPC the chain decides", () => {
  /** The same database and stores, served by an app that has RPC_URL. */
  const withRpc = (reconcileSeconds = 30) =>
    composeApp({
      settings: { ...gw.settings, rpcUrl: chain.devnet.rpcUrl, reconcileSeconds },
      db: gw.db,
      stores: gw.stores,
      log: createLogger("silent"),
      jwtSecret: CHAOS_JWT_SECRET,
      facilitator: gw.running.facilitator,
    });

  test("check settles a paid row from the chain; an operator's release of it cannot undo that", async () => {
    const { id, tx } = await leavePending(2, "drop");
    const res = await resolve(id, { action: "release" }, writeToken, withRpc().app);
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as any;
    expect(data.payment).toMatchObject({ state: "settled", transaction: tx });
    expect(data.resolution).toMatchObject({ basis: "chain", outcome: "settled" });
  }, 30_000);

  test("an authorization still usable is left pending (409), never released", async () => {
    const { id } = await leavePending(3, "blackhole");
    const res = await resolve(id, { action: "release" }, writeToken, withRpc().app);
    expect(res.status).toBe(409);
    expect((await gw.stores.payments.get(id))!.state).toBe("pending");
    expect(audit(id)).toEqual([]);
  }, 30_000);

  test("the background reconciliation settles a lost answer on its own timer", async () => {
    const { id, tx } = await leavePending(4, "drop");
    const { reconciler } = withRpc(1);
    reconciler.start();
    try {
      await eventually(
        async () => (await gw.stores.payments.get(id))!.state === "settled",
        "the row settled in the background",
      );
    } finally {
      await reconciler.stop();
    }
    expect((await gw.stores.payments.get(id))!.txHash).toBe(tx as string);
  }, 30_000);
});

describe("cidgate payments resolve", () => {
  test("without an RPC: --settle <tx> settles, recorded as the OS user's word; a plain check exits 1", async () => {
    const { id, tx } = await leavePending(5, "drop");
    const check = cli([String(id)], false);
    expect(check.code).toBe(1);
    expect(check.err).toContain("settle it with its transaction hash");
    const run = cli([String(id), "--settle", tx!], false);
    expect(run.err).toBe("");
    expect(run.code).toBe(0);
    expect(run.out).toContain(`payment ${id}: settled by ${tx}`);
    expect(audit(id)).toEqual([expect.objectContaining({ action: "settle", basis: "operator" })]);
    expect(String(audit(id)[0].actor)).toStartWith("cli:");
    expect(cli(["x1"], false).code).toBe(2);
  }, 30_000);

  test("with an RPC: the chain settles it", async () => {
    const { id, tx } = await leavePending(6, "drop");
    const run = cli([String(id)], true);
    expect(run.code).toBe(0);
    expect(run.out).toContain(`settled by ${tx} (on the chain's word)`);
    expect(audit(id)).toEqual([expect.objectContaining({ action: "check", basis: "chain", outcome: "settled" })]);
  }, 30_000);
});
