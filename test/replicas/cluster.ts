/**
 * Two cidgate replicas on one PostgreSQL, nothing mocked, as a creator who
 * outgrew one machine runs them (issue 14):
 *
 * - a fresh database on the tests' real PostgreSQL (test/support/postgres.ts);
 * - the devnet chain with the REAL built-in facilitator served over HTTP, as
 *   a remote facilitator is (chaos/stack.ts startChaosChain; its fault proxy,
 *   the suite's only fake, passes everything through unless a test says so);
 * - each replica its own `bun src/index.ts` process (what `npm start` runs),
 *   with its own port, content folder, content index file (CONTENT_INDEX_DB)
 *   and data folder, and the same CIDGATE_DB, JWT_SECRET and pricing YAML;
 * - the round-robin balancer of ./proxy.ts in front, which PUBLIC_URL names.
 *
 * Each cluster sells to its own fresh pay-to address, so its transfers on the
 * chain (shared by a test file's clusters) are told apart from another's.
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { x402Client } from "@x402/fetch";
import { SQL } from "bun";
import { type Address, erc20Abi } from "viem";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { type ChaosChain, startChaosChain } from "../../chaos/stack";
import { localPublicClient } from "../../src/chain/devnet";
import { cidOfBytes } from "../../src/content/cid";
import { createToken } from "../../src/http/token";
import { eventually } from "../support/eventually";
import { createTestDatabase } from "../support/postgres";
import { type RoundRobinProxy, startRoundRobinProxy } from "./proxy";

const ROOT = join(import.meta.dir, "../..");

export const JWT_SECRET = "replica-secret-replica-secret-replica-01";
/** Every file's price (USDC smallest unit): one cent. */
export const PRICE = 10_000n;

/** The pricing file every replica is deployed with: the files under shop/ at PRICE, to the cluster's PAY_TO. */
export const PRICING_YAML = `defaults:
  network: base-sepolia
  pay_to: \${PAY_TO}
instructions:
  shop:
    name: Replicated shop
    payment_requirements:
      - amount: ${PRICE}
    files:
      - shop/*.txt
`;

export { type ChaosChain, startChaosChain };

export interface Replica {
  name: string;
  /** Where it listens (its own port). */
  url: string;
  pid: number;
  /** Its folder: content/, config/, data/, content.db. */
  dir: string;
  /** Everything it wrote on stdout and stderr: shown when a test fails. */
  output(): string;
  /** SIGKILL, and waits until it is gone. */
  kill9(): Promise<void>;
  /** SIGTERM (finishes requests in flight), and waits. */
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /** name -> content deployed to EVERY replica. */
  files: Record<string, string>;
  /** replica name -> extra files deployed to that replica only. */
  only?: Record<string, Record<string, string>>;
  /** Extra environment for every replica. */
  env?: Record<string, string>;
  /** Replicas to start, at once (default A and B). 0: none yet (a test starts them itself). */
  replicas?: string[];
}

export interface Cluster {
  chain: ChaosChain;
  pgUrl: string;
  /** The tests' own connection to the shared database. */
  sql: SQL;
  proxy: RoundRobinProxy;
  payTo: Address;
  /** file name -> CID (the replicas compute the same). */
  cids: Record<string, string>;
  replicas: Map<string, Replica>;
  /** Starts one more replica process over the same database (its folder made once per name). */
  start(name: string): Promise<Replica>;
  /** A management token (read, write), signed with the shared secret: valid on every replica. */
  token(): Promise<string>;
  /** USDC balance of the cluster's pay-to on the chain. */
  balance(): Promise<bigint>;
  /** Transfers to the cluster's pay-to on the chain. */
  transfers(): Promise<{ tx: string; from: string; value: bigint }[]>;
  stop(): Promise<void>;
}

const childEnv = () => ({ PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", TMPDIR: tmpdir() });

/** One replica process; resolves once its start-up summary names the URL it listens on. */
async function spawnReplica(name: string, dir: string, env: Record<string, string>): Promise<Replica> {
  // Run from its own folder, as on its own machine: nothing it writes lands in the repository. With a
  // parent-death signal (util-linux's setpriv execs it: the pid stays the replica's), a test process
  // killed outright takes its replicas with it.
  const setpriv = Bun.which("setpriv");
  const guard = setpriv ? [setpriv, "--pdeathsig", "SIGKILL"] : [];
  const child = Bun.spawn([...guard, process.execPath, join(ROOT, "src/index.ts")], {
    cwd: dir,
    env: { ...childEnv(), ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let text = "";
  const decoder = new TextDecoder();
  const drain = async (stream: ReadableStream<Uint8Array>) => {
    try {
      for await (const chunk of stream) text += decoder.decode(chunk, { stream: true });
    } catch {
      // the process is gone
    }
  };
  void drain(child.stdout);
  void drain(child.stderr);
  let url: string | undefined;
  await eventually(
    () => {
      url = /cidgate \S+ listening on (http:\/\/[^\s;]+)/.exec(text)?.[1];
      return url !== undefined || child.exitCode !== null;
    },
    `replica ${name} starting`,
    60_000,
  ).catch((e) => {
    child.kill(9);
    throw new Error(`${(e as Error).message}\n${text}`);
  });
  if (!url) throw new Error(`replica ${name} exited ${child.exitCode} before listening:\n${text}`);
  const ended = async (signal: number) => {
    if (child.exitCode === null) child.kill(signal);
    await child.exited;
  };
  return { name, url, pid: child.pid, dir, output: () => text, kill9: () => ended(9), stop: () => ended(15) };
}

export async function startCluster(chain: ChaosChain, o: ClusterOptions): Promise<Cluster> {
  const root = mkdtempSync(join(tmpdir(), "cidgate-replicas-"));
  const pgUrl = await createTestDatabase();
  const sql = new SQL({ url: pgUrl, max: 2 });
  const proxy = startRoundRobinProxy();
  const payTo = privateKeyToAccount(generatePrivateKey()).address;
  const client = localPublicClient(chain.devnet.rpcUrl);

  const cids: Record<string, string> = {};
  const every = { ...o.files, ...Object.assign({}, ...Object.values(o.only ?? {})) } as Record<string, string>;
  for (const [file, text] of Object.entries(every))
    cids[file] = (await cidOfBytes(new TextEncoder().encode(text))).toString();

  // The deployment every replica gets (as git or rsync would put it on each machine).
  const release = join(root, "release");
  const write = (base: string, files: Record<string, string>) => {
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(dirname(join(base, file)), { recursive: true });
      writeFileSync(join(base, file), text);
    }
  };
  write(join(release, "content"), o.files);
  write(join(release, "config"), { "pricing.yaml": PRICING_YAML });

  const replicas = new Map<string, Replica>();
  const cluster: Cluster = {
    chain,
    pgUrl,
    sql,
    proxy,
    payTo,
    cids,
    replicas,
    async start(name) {
      const dir = join(root, name);
      mkdirSync(dir, { recursive: true });
      cpSync(release, dir, { recursive: true });
      write(join(dir, "content"), o.only?.[name] ?? {});
      const replica = await spawnReplica(name, dir, {
        CIDGATE_DB: pgUrl,
        CONTENT_INDEX_DB: join(dir, "content.db"),
        CIDGATE_DATA_DIR: join(dir, "data"),
        CIDGATE_CONTENT_DIR: join(dir, "content"),
        CIDGATE_CONFIG_DIR: join(dir, "config"),
        HOST: "127.0.0.1",
        PORT: "0",
        PUBLIC_URL: proxy.url,
        JWT_SECRET,
        PAY_TO: payTo,
        USDC_ADDRESS_BASE_SEPOLIA: chain.devnet.token,
        FACILITATOR_URL: chain.proxy.url,
        FACILITATOR_TIMEOUT_MS: "5000",
        // The chain decides what a dead replica left pending; reconciliation runs every second.
        RPC_URL: chain.devnet.rpcUrl,
        RECONCILE_SECONDS: "1",
        LOG_LEVEL: "warn",
        ...o.env,
      });
      replicas.set(name, replica);
      proxy.backends.push(replica.url);
      return replica;
    },
    token: () => createToken(JWT_SECRET, { scopes: ["read", "write"], ttlSeconds: 3600 }),
    balance: () =>
      client.readContract({ address: chain.devnet.token, abi: erc20Abi, functionName: "balanceOf", args: [payTo] }),
    async transfers() {
      const logs = await client.getContractEvents({
        address: chain.devnet.token,
        abi: erc20Abi,
        eventName: "Transfer",
        args: { to: payTo },
        fromBlock: 0n,
      });
      return logs.map((l) => ({
        tx: l.transactionHash.toLowerCase(),
        from: String(l.args.from).toLowerCase(),
        value: l.args.value ?? 0n,
      }));
    },
    async stop() {
      await Promise.all([...replicas.values()].map((r) => r.stop()));
      await proxy.stop();
      await sql.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
  try {
    await Promise.all((o.replicas ?? ["A", "B"]).map((name) => cluster.start(name)));
  } catch (e) {
    await cluster.stop();
    throw e;
  }
  return cluster;
}

/** Waits until a replica answers /readyz with 200. */
export function ready(replica: Replica): Promise<void> {
  return eventually(
    async () => (await fetch(`${replica.url}/readyz`).catch(() => undefined))?.status === 200,
    `replica ${replica.name} ready`,
    30_000,
  );
}

/** The 402 a replica (or the balancer) answers for a CID. */
export async function offerFrom(origin: string, cid: string): Promise<Response> {
  return fetch(`${origin}/x402/cid/${cid}`);
}

/** The amount the v2 offer (PAYMENT-REQUIRED) of a 402 asks; undefined when it is no 402. */
export function offeredAmount(res: Response): string | undefined {
  const header = res.headers.get("payment-required");
  if (res.status !== 402 || !header) return undefined;
  const offer = JSON.parse(Buffer.from(header, "base64").toString("utf8")) as { accepts: { amount: string }[] };
  return offer.accepts[0]?.amount;
}

/**
 * A PAYMENT-SIGNATURE for the 402 `res`, signed as a stock x402 client signs
 * it (@x402/fetch's client with @x402/evm's exact scheme; the devnet token
 * allowed by its spend controls).
 */
export async function signedFor(res: Response, buyer: PrivateKeyAccount, token: Address): Promise<string> {
  const { decodePaymentRequiredHeader, encodePaymentSignatureHeader } = await import("@x402/core/http");
  const header = res.headers.get("payment-required");
  if (res.status !== 402 || !header) throw new Error(`expected a 402 with PAYMENT-REQUIRED, got ${res.status}`);
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: buyer });
  client.setSpendControls({ allowedAssets: [{ network: "eip155:84532", asset: token }] });
  return encodePaymentSignatureHeader(await client.createPaymentPayload(decodePaymentRequiredHeader(header)));
}

export const buyer = (chain: ChaosChain, i: number): PrivateKeyAccount =>
  privateKeyToAccount(chain.devnet.buyers[i].privateKey);

/**
 * The ledger against the chain: every transfer to pay-to has exactly one
 * settled row with its transaction (same payer, same amount), and every
 * settled row has its transfer. One line per discrepancy; none: agreed.
 */
export async function ledgerAgainstChain(cluster: Cluster): Promise<string[]> {
  const transfers = await cluster.transfers();
  const rows = (await cluster.sql`
    SELECT id, lower(payer) AS payer, amount, lower(tx_hash) AS tx FROM payments WHERE state = 'settled'
  `) as { id: number; payer: string; amount: string; tx: string | null }[];
  const problems: string[] = [];
  for (const t of transfers) {
    const mine = rows.filter((r) => r.tx === t.tx);
    if (mine.length !== 1) problems.push(`transfer ${t.tx} from ${t.from}: ${mine.length} settled rows`);
    else if (mine[0].payer !== t.from || mine[0].amount !== String(t.value))
      problems.push(`transfer ${t.tx}: its row ${mine[0].id} names another payer or amount`);
  }
  for (const r of rows)
    if (!transfers.some((t) => t.tx === r.tx)) problems.push(`settled row ${r.id} has no transfer (${r.tx})`);
  return problems;
}
