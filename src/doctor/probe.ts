/**
 * The I/O half of the checks (checks.ts decides): asks the facilitator, the
 * RPC, the file system and the database what checks.ts needs, each call
 * bounded, each failure kept as a fact ("did not answer: ...") rather than
 * thrown, so one dead dependency never hides the others' results.
 */
import { existsSync, statfsSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { SQL } from "bun";
import { readMigrationFiles } from "drizzle-orm/migrator";
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { NETWORKS, type NetworkName, networkByChainId, usdcAddress } from "../chain/networks";
import { configuredRpcs, type RpcSettings, servingRpc } from "../chain/rpc-choice";
import type { Db } from "../db/client";
import { displayUrl } from "../display-url";
import type { Facilitator } from "../facilitator/types";
import { jwtSecretPath } from "../http/jwt-secret";
import { type Settings, selectsPostgres } from "../settings";
import type { Probed, ShopFacts } from "./checks";

export interface ProbeOptions {
  settings: Settings;
  env: Record<string, string | undefined>;
  /** The SQLite database checked for integrity: CIDGATE_DB, or on PostgreSQL this replica's content index. */
  db: Db;
  /** Networks of the instructions that price a CID (what the facilitator must settle). */
  pricedNetworks: readonly string[];
  facilitator: Pick<Facilitator, "supported">;
  /** "integrity_check" reads every page (doctor); "quick_check" skips index cross-checks (start-up, large ledgers). */
  integrity: "integrity_check" | "quick_check";
  /** Bound on each network call, ms (default: FACILITATOR_TIMEOUT_MS, at most 10 s). */
  timeoutMs?: number;
}

/** First line of what went wrong; a URL in it (viem names the RPC's) loses what may be a key. */
const reason = (e: unknown) =>
  ((e as Error).message ?? String(e))
    .split("\n")[0]
    .replace(/\b[a-z][\w+.-]*:\/\/[^\s"'<>]+/gi, (url) => displayUrl(url))
    .slice(0, 200);

async function probe<T>(call: () => Promise<T> | T, timeoutMs: number): Promise<Probed<T>> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    return { value: await Promise.race([Promise.resolve().then(call), timeout]) };
  } catch (e) {
    return { error: reason(e) };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Every RPC variable that is set with its chain id (each URL asked once, by
 * `chainIdOf`), and the one serving each priced network, chosen as the
 * ledger chooses (src/chain/rpc-choice.ts).
 */
export async function rpcFacts(
  settings: Partial<RpcSettings>,
  pricedNetworks: readonly string[],
  chainIdOf: (url: string) => Promise<Probed<number>>,
): Promise<Pick<ShopFacts, "rpcs" | "served">> {
  const asked = new Map<string, Promise<Probed<number>>>();
  const ask = (url: string) => {
    let p = asked.get(url);
    if (!p) asked.set(url, (p = chainIdOf(url)));
    return p;
  };
  const rpcs = await Promise.all(configuredRpcs(settings).map(async (r) => ({ ...r, chainId: await ask(r.url) })));
  const served: ShopFacts["served"] = {};
  for (const network of pricedNetworks.filter((n): n is NetworkName => Object.hasOwn(NETWORKS, n))) {
    served[network] = await servingRpc(settings, network, async (url) => {
      const id = await ask(url);
      return "value" in id ? id.value : undefined;
    });
  }
  return { rpcs, served };
}

const PG_MIGRATIONS = join(import.meta.dir, "../../drizzle-pg");

/**
 * Whether the PostgreSQL database answers, and how far it is migrated, read without migrating it
 * (drizzle's journal table, drizzle.__drizzle_migrations): `doctor` changes nothing.
 */
export async function postgresFacts(
  url: string,
  timeoutMs: number,
): Promise<Probed<{ applied: number; known: number }>> {
  const known = readMigrationFiles({ migrationsFolder: PG_MIGRATIONS }).length;
  const sql = new SQL({ url, max: 1, connectionTimeout: Math.ceil(timeoutMs / 1000) });
  const answer = await probe(async () => {
    const [{ journal }] = await sql`SELECT to_regclass('drizzle.__drizzle_migrations') IS NOT NULL AS journal`;
    if (!journal) return { applied: 0, known };
    const [{ n }] = await sql`SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations`;
    return { applied: Number(n), known };
  }, timeoutMs);
  await sql.close().catch(() => {});
  if ("value" in answer) return answer;
  // The server's reason names the user at most; the password is dropped all the same, should one appear.
  let password = "";
  try {
    password = decodeURIComponent(new URL(url).password);
  } catch {}
  return { error: password ? answer.error.split(password).join("…") : answer.error };
}

export async function gatherFacts(o: ProbeOptions): Promise<ShopFacts> {
  const { settings } = o;
  const timeoutMs = o.timeoutMs ?? Math.min(10_000, settings.facilitatorTimeoutMs);
  const priced = o.pricedNetworks;
  const clients = new Map<string, ReturnType<typeof createPublicClient>>();
  const client = (url: string) => {
    let c = clients.get(url);
    if (!c) clients.set(url, (c = createPublicClient({ transport: http(url, { timeout: timeoutMs, retryCount: 0 }) })));
    return c;
  };

  const [supported, { rpcs, served }] = await Promise.all([
    probe(async () => (await o.facilitator.supported()).kinds, timeoutMs),
    rpcFacts(settings, priced, (url) => probe(() => client(url).getChainId(), timeoutMs)),
  ]);
  // The built-in facilitator settles through RPC_URL alone: its relayer pays gas there.
  const main = rpcs.find((r) => r.variable === "RPC_URL");
  const rpc = main ? client(main.url) : undefined;
  const rpcNetwork = main && "value" in main.chainId ? networkByChainId(main.chainId.value) : undefined;

  let relayer: ShopFacts["relayer"];
  if (settings.facilitatorUrl === "local" && settings.relayerPrivateKey) {
    const address = privateKeyToAccount(settings.relayerPrivateKey as `0x${string}`).address;
    relayer = {
      address,
      wei: rpc && rpcNetwork ? await probe(() => rpc.getBalance({ address }), timeoutMs) : undefined,
    };
  }

  const usdc: ShopFacts["usdc"][number][] = [];
  for (const network of priced.filter((n): n is NetworkName => Object.hasOwn(NETWORKS, n))) {
    const address = usdcAddress(network, settings);
    const overridden = (network === "base" ? settings.usdcAddressBase : settings.usdcAddressBaseSepolia) !== undefined;
    const serving = served[network];
    const hasCode = serving
      ? await probe(async () => {
          const code = await client(serving.url).getCode({ address });
          return code !== undefined && code !== "0x";
        }, timeoutMs)
      : undefined;
    usdc.push({ network, address, overridden, hasCode });
  }

  const postgres = selectsPostgres(settings.db);
  // The SQLite file on this machine: CIDGATE_DB, or with PostgreSQL the replica's content index.
  const local = postgres ? settings.contentIndexDb : settings.db;
  const onDisk = local !== ":memory:";
  const dbDir = onDisk ? dirname(resolve(local)) : resolve(settings.dataDir);
  const freeBytes = await probe(() => {
    const s = statfsSync(existsSync(dbDir) ? dbDir : ".");
    return s.bavail * s.bsize;
  }, timeoutMs);

  const files: ShopFacts["files"][number][] = [];
  const add = (label: string, path: string, kind: ShopFacts["files"][number]["kind"]) => {
    if (existsSync(path)) files.push({ label, mode: statSync(path).mode, kind });
  };
  add(settings.dataDir, settings.dataDir, "directory");
  if (settings.jwtSecret === undefined) add(jwtSecretPath(settings), jwtSecretPath(settings), "secret");
  if (onDisk) add(local, local, "database");
  add(".env", ".env", "env");

  const integrity = await probe(() => {
    const rows = o.db.sqlite.query<Record<string, string>, []>(`PRAGMA ${o.integrity}`).all();
    return rows.map((r) => Object.values(r)[0]).join("; ") || "ok";
  }, timeoutMs);

  return {
    postgres: postgres ? await postgresFacts(settings.db, timeoutMs) : undefined,
    settings,
    publicUrlGiven: (o.env.PUBLIC_URL ?? "") !== "",
    pricedNetworks: priced,
    supported,
    rpcs,
    served,
    relayer,
    usdc,
    freeBytes,
    files,
    integrity,
  };
}
