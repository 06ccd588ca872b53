/**
 * What chaos cases (and the tests of the same behaviours) start: a fresh
 * anvil devnet with the EIP-3009 test token, the REAL built-in facilitator
 * served over HTTP (as `cidgate facilitator` serves it), the fault proxy in
 * front of it (chaos/fault-proxy.ts, the only fake), and cidgate pointed at
 * the proxy: in this process through startServer, or as its own process
 * (`bun src/index.ts`) for kill -9. Plus the buyer's side (signed x402 v1
 * proofs) and the ledger-vs-chain integrity check.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Elysia } from "elysia";
import { erc20Abi, parseAbiItem } from "viem";
import { type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { type Devnet, localPublicClient, startDevnet } from "../src/chain/devnet";
import { type Db, openDb } from "../src/db/client";
import { createLocalFacilitator } from "../src/facilitator/local";
import { facilitatorModule } from "../src/facilitator/routes";
import { errors } from "../src/http/errors";
import { createLogger } from "../src/http/logging";
import type { Payment } from "../src/ledger/store";
import { type RunningServer, startServer } from "../src/server";
import { loadSettings, type Settings } from "../src/settings";
import { createStores, type Stores } from "../src/stores";
import { signProof } from "../test/gateway/fixtures";
import { type FaultProxy, startFaultProxy } from "./fault-proxy";

export const CHAOS_JWT_SECRET = "chaos-secret-chaos-secret-chaos-secret-01";
export const PRICE = "10000";

export interface ChaosChain {
  devnet: Devnet;
  /** The real facilitator's own URL (behind the proxy). */
  facilitatorUrl: string;
  proxy: FaultProxy;
  stop(): Promise<void>;
}

/** Devnet + real facilitator over HTTP + fault proxy (mode `pass`). */
export async function startChaosChain(buyers = 4): Promise<ChaosChain> {
  const devnet = await startDevnet({ buyers });
  const settings = loadSettings({ RPC_URL: devnet.rpcUrl, RECEIPT_TIMEOUT_SECONDS: "20" });
  const facilitator = createLocalFacilitator({
    rpcUrl: devnet.rpcUrl,
    relayerPrivateKey: devnet.relayer.privateKey,
    settings,
  });
  const app = new Elysia().use(errors).use(facilitatorModule(facilitator));
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", idleTimeout: 60, fetch: app.fetch });
  const facilitatorUrl = `http://127.0.0.1:${server.port}`;
  const proxy = startFaultProxy(facilitatorUrl);
  return {
    devnet,
    facilitatorUrl,
    proxy,
    async stop() {
      await proxy.stop();
      await server.stop(true);
      facilitator.close();
      await devnet.stop();
    },
  };
}

/** Files to sell and the environment of a cidgate pointed at the proxy; `rpc: false` leaves out RPC_URL. */
export function gatewayEnv(
  chain: ChaosChain,
  dir: string,
  o: { rpc: boolean; db?: string; env?: Record<string, string> },
): Record<string, string> {
  return {
    CIDGATE_DB: o.db ?? ":memory:",
    HOST: "127.0.0.1",
    PORT: "0",
    CIDGATE_CONTENT_DIR: join(dir, "content"),
    CIDGATE_CONFIG_DIR: join(dir, "config"),
    USDC_ADDRESS_BASE_SEPOLIA: chain.devnet.token,
    FACILITATOR_URL: chain.proxy.url,
    FACILITATOR_TIMEOUT_MS: "5000",
    ...(o.rpc ? { RPC_URL: chain.devnet.rpcUrl } : {}),
    LOG_LEVEL: "silent",
    ...o.env,
  };
}

/** Writes the files, indexes them and prices every one at PRICE (an API instruction). */
export async function priceFiles(
  db: Db,
  settings: Settings,
  chain: ChaosChain,
  files: Record<string, string>,
  access?: "once" | "forever",
): Promise<{ stores: Stores; cids: Record<string, string> }> {
  mkdirSync(settings.contentDir, { recursive: true });
  for (const [name, bytes] of Object.entries(files)) writeFileSync(join(settings.contentDir, name), bytes);
  const stores = createStores(db, settings);
  await stores.content.index();
  const instruction = stores.instructions.create({
    name: "Access fee",
    description: "Access fee",
    ...(access ? { access } : {}),
    requirements: [
      { network: "base-sepolia", asset: chain.devnet.token, pay_to: chain.devnet.seller.address, amount: PRICE },
    ],
  });
  const cids: Record<string, string> = {};
  for (const name of Object.keys(files)) {
    const row = db.sqlite.query<{ cid: string }, [string]>("SELECT cid FROM content_files WHERE path = ?").get(name);
    if (!row) throw new Error(`${name} was not indexed`);
    cids[name] = row.cid;
    stores.instructions.attachCid(instruction.id, row.cid);
  }
  return { stores, cids };
}

export interface ChaosGateway {
  url: string;
  db: Db;
  stores: Stores;
  settings: Settings;
  cids: Record<string, string>;
  running: RunningServer;
  /** Log lines (JSON) the gateway wrote. */
  logLines: string[];
  stop(): Promise<void>;
}

/** cidgate in this process (startServer), pointed at the proxy; background reconciliation off unless asked. */
export async function startChaosGateway(
  chain: ChaosChain,
  o: {
    rpc: boolean;
    files: Record<string, string>;
    env?: Record<string, string>;
    reconcile?: boolean;
    /** A database file (for a CLI to open too); default in memory. */
    dbFile?: boolean;
  },
): Promise<ChaosGateway> {
  const dir = mkdtempSync(join(tmpdir(), "cidgate-chaos-"));
  const dbPath = o.dbFile ? join(dir, "cidgate.db") : ":memory:";
  const settings = loadSettings(gatewayEnv(chain, dir, { ...o, db: dbPath }));
  const db = openDb(dbPath);
  const { stores, cids } = await priceFiles(db, settings, chain, o.files);
  const logLines: string[] = [];
  const log = createLogger("info", { write: (line: string) => void logLines.push(line) });
  const running = await startServer({
    settings,
    db,
    stores,
    log,
    jwtSecret: CHAOS_JWT_SECRET,
    pricing: false,
    reconcile: o.reconcile ?? false,
  });
  return {
    url: running.url,
    db,
    stores,
    settings,
    cids,
    running,
    logLines,
    async stop() {
      await running.stop(true);
      db.sqlite.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const buyerOf = (chain: ChaosChain, i: number): PrivateKeyAccount =>
  privateKeyToAccount(chain.devnet.buyers[i].privateKey);

/** A fresh x402 v1 proof from buyer `i` for PRICE to the seller; `validForSeconds` default 60. */
export function proofFor(chain: ChaosChain, i: number, validForSeconds?: number) {
  return signProof({
    version: 1,
    account: buyerOf(chain, i),
    asset: chain.devnet.token,
    payTo: chain.devnet.seller.address,
    amount: PRICE,
    validBefore: validForSeconds === undefined ? undefined : Math.floor(Date.now() / 1000) + validForSeconds,
  });
}

/** GET the file with a proof: status, body, content type. */
export async function buy(url: string, cid: string, header: string) {
  const res = await fetch(`${url}/x402/cid/${cid}`, { headers: { "X-PAYMENT": header } });
  return { status: res.status, text: await res.text(), type: res.headers.get("content-type") ?? "" };
}

/** The payment row of an authorization. */
export function rowOf(db: Db, payer: string, nonce: string): Payment | undefined {
  return db.sqlite
    .query<Record<string, unknown>, [string, string]>(
      "SELECT id, state, tx_hash AS txHash, error FROM payments WHERE payer = ? AND nonce = ?",
    )
    .get(payer, nonce.toLowerCase()) as Payment | undefined;
}

const AUTHORIZATION_USED = parseAbiItem("event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)");

/**
 * Ledger vs chain: every Transfer to pay-to has a settled row with its
 * transaction; no settled row lacks its transfer (payer -> pay-to, amount);
 * no authorization used twice (on chain, or by two settled rows).
 * Returns one line per discrepancy.
 */
export async function integrity(chain: ChaosChain, db: Db): Promise<string[]> {
  const client = localPublicClient(chain.devnet.rpcUrl);
  const transfers = await client.getContractEvents({
    address: chain.devnet.token,
    abi: erc20Abi,
    eventName: "Transfer",
    args: { to: chain.devnet.seller.address },
    fromBlock: 0n,
  });
  const used = await client.getLogs({ address: chain.devnet.token, event: AUTHORIZATION_USED, fromBlock: 0n });
  const settled = db.sqlite
    .query<{ id: number; payer: string; nonce: string; amount: string; tx: string }, []>(
      "SELECT id, payer, nonce, amount, tx_hash AS tx FROM payments WHERE state = 'settled'",
    )
    .all();
  const problems: string[] = [];
  const byTx = new Map(settled.map((r) => [r.tx?.toLowerCase(), r]));
  for (const t of transfers) {
    const row = byTx.get(t.transactionHash.toLowerCase());
    if (!row) problems.push(`transfer ${t.transactionHash} to pay-to has no settled row`);
  }
  const transferByTx = new Map(transfers.map((t) => [t.transactionHash.toLowerCase(), t]));
  for (const r of settled) {
    const t = transferByTx.get(r.tx?.toLowerCase());
    if (!t) problems.push(`settled row ${r.id} has no transfer on chain (${r.tx})`);
    else if (t.args.from?.toLowerCase() !== r.payer.toLowerCase() || String(t.args.value) !== r.amount)
      problems.push(`settled row ${r.id}: its transfer is from another payer or of another amount`);
  }
  if (byTx.size !== settled.length) problems.push("two settled rows share one transaction");
  const keys = used.map((l) => `${l.args.authorizer}|${l.args.nonce}`.toLowerCase());
  if (new Set(keys).size !== keys.length) problems.push("an authorization was used twice on chain");
  const rowKeys = settled.map((r) => `${r.payer}|${r.nonce}`.toLowerCase());
  if (new Set(rowKeys).size !== rowKeys.length) problems.push("an authorization has two settled rows");
  return problems;
}
