/**
 * The health checks of a shop, as one decision over facts gathered elsewhere
 * (probe.ts does the I/O): `cidgate doctor` prints every result and exits 1
 * on a failure; start-up (src/startup/preflight.ts) runs the same decision
 * and refuses to listen on a failure. No HTTP, no RPC, no files here, so
 * every rule is tested on plain facts.
 *
 * A failure is what makes a sale impossible or wrong (a URL buyers cannot
 * reach, a priced network nobody settles, a relayer with no gas, a corrupt
 * database); a warning is what an operator should know but a shop can run with.
 */
import { NETWORKS, type NetworkName, networkByChainId } from "../chain/networks";
import { type RpcSetting, rpcVariableOf } from "../chain/rpc-choice";
import { displayUrl } from "../display-url";
import { sharedSecretMissing } from "../http/jwt-secret";
import { type Settings, selectsPostgres } from "../settings";

export type CheckStatus = "ok" | "warn" | "fail";

export interface CheckResult {
  /** Short and stable: what `doctor` prints first on the line, and what tests look for. */
  name: string;
  status: CheckStatus;
  message: string;
}

/** A probe's answer: its value, or why there is none. */
export type Probed<T> = { value: T } | { error: string };

export interface ShopFacts {
  settings: Settings;
  /** PUBLIC_URL was set (not derived from HOST and PORT). */
  publicUrlGiven: boolean;
  /** Networks of the instructions that price at least one CID. */
  pricedNetworks: readonly string[];
  /** The facilitator's GET /supported kinds (the built-in one's own list for `local`). */
  supported: Probed<readonly { scheme: string; network: string }[]>;
  /** Each RPC variable that is set, with its eth_chainId (probe.ts's rpcFacts). */
  rpcs: readonly (RpcSetting & { chainId: Probed<number> })[];
  /** Per priced network, the RPC the gateway reads it through (src/chain/rpc-choice.ts); missing: none. */
  served: Partial<Record<string, RpcSetting>>;
  /** The built-in facilitator's relayer and its ETH balance in wei; undefined for a remote facilitator. */
  relayer?: { address: string; wei?: Probed<bigint> };
  /** Per priced network: the USDC address used, and whether a contract is there (undefined: not checkable, no RPC on that chain). */
  usdc: readonly { network: string; address: string; overridden: boolean; hasCode?: Probed<boolean> }[];
  /** Free bytes where the database lives. */
  freeBytes?: Probed<number>;
  /** Permission bits of files that hold secrets or data. */
  files: readonly { label: string; mode: number; kind: "secret" | "env" | "database" | "directory" }[];
  /** PRAGMA integrity_check (or quick_check) result: "ok" or the first problem. */
  integrity?: Probed<string>;
  /**
   * With PostgreSQL (CIDGATE_DB=postgres://...): whether it answers, and how many of drizzle-pg/'s
   * migrations it has (`applied`) of those this version ships (`known`). Undefined on SQLite.
   */
  postgres?: Probed<{ applied: number; known: number }>;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|::1|\[::1\])$/i;
const UNSPECIFIED = /^(0\.0\.0\.0|::|\[::\])$/;
const MIB = 1024 * 1024;
/** Below this the relayer is warned about: some hundreds of settlements on Base at today's gas. */
export const LOW_GAS_WEI = 10n ** 15n; // 0.001 ETH
export const MIN_FREE_BYTES = 100 * MIB;
export const LOW_FREE_BYTES = 1024 * MIB;

const known = (n: string): n is NetworkName => Object.hasOwn(NETWORKS, n);

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK.test(host);
}

function publicUrlChecks(f: ShopFacts): CheckResult[] {
  const { host, publicUrl } = f.settings;
  const urlHost = new URL(publicUrl).hostname;
  const name = "public URL";
  if (!isLoopbackHost(host) && !f.publicUrlGiven)
    return [
      {
        name,
        status: "fail",
        message: `HOST=${host} listens beyond this machine but PUBLIC_URL is unset, so every 402 would name ${publicUrl}; set PUBLIC_URL to the address buyers use, e.g. https://shop.example.com`,
      },
    ];
  if (UNSPECIFIED.test(urlHost))
    return [
      {
        name,
        status: "fail",
        message: `${publicUrl} is a listen address, not one a buyer can reach; set PUBLIC_URL to the address buyers use, e.g. https://shop.example.com`,
      },
    ];
  if (!isLoopbackHost(host) && isLoopbackHost(urlHost))
    return [
      {
        name,
        status: "fail",
        message: `PUBLIC_URL ${publicUrl} names this machine only, but HOST=${host} serves others; set it to the address buyers use`,
      },
    ];
  if (f.pricedNetworks.includes("base") && !isLoopbackHost(urlHost) && !publicUrl.startsWith("https:"))
    return [
      {
        name,
        status: "fail",
        message: `${publicUrl} is plain http and base (mainnet) is priced; serve https behind a proxy (docs/deploy.md) and set PUBLIC_URL to it`,
      },
    ];
  return [{ name, status: "ok", message: publicUrl }];
}

function facilitatorChecks(f: ShopFacts): CheckResult[] {
  const url =
    f.settings.facilitatorUrl === "local"
      ? "the built-in facilitator (FACILITATOR_URL=local)"
      : displayUrl(f.settings.facilitatorUrl);
  const name = "facilitator";
  if ("error" in f.supported) {
    return [
      {
        name,
        status: f.pricedNetworks.length > 0 ? "fail" : "warn",
        message: `${url} did not answer GET /supported: ${f.supported.error}${f.pricedNetworks.length > 0 ? `; ${f.pricedNetworks.join(", ")} cannot be settled` : ""}`,
      },
    ];
  }
  const kinds = f.supported.value.filter((k) => k.scheme === "exact");
  const settles = (n: string) => kinds.some((k) => k.network === n || (known(n) && k.network === NETWORKS[n].caip2));
  const offered = [...new Set(kinds.map((k) => k.network))].join(", ") || "nothing";
  if (f.pricedNetworks.length === 0)
    return [{ name, status: "ok", message: `${url} answers; it settles ${offered} (nothing is priced yet)` }];
  const missing = f.pricedNetworks.filter((n) => !settles(n));
  if (missing.length > 0) {
    const fix =
      f.settings.facilitatorUrl === "local"
        ? "add them to FACILITATOR_NETWORKS"
        : "use a facilitator that settles them (docs/mainnet.md), or FACILITATOR_URL=local with an RPC and a funded relayer";
    return [
      {
        name,
        status: "fail",
        message: `${url} does not settle ${missing.join(", ")}, which the pricing uses (it settles ${offered}); ${fix}`,
      },
    ];
  }
  return [{ name, status: "ok", message: `${url} settles ${f.pricedNetworks.join(", ")}` }];
}

/** How a check names an RPC: its variable and its URL without what may be a key. */
const rpcName = (r: RpcSetting) => `${r.variable} ${displayUrl(r.url)}`;
const chainText = (chainId: number) =>
  `chain ${chainId} (${networkByChainId(chainId) ?? "not a network cidgate knows"})`;

function rpcChecks(f: ShopFacts): CheckResult[] {
  const local = f.settings.facilitatorUrl === "local";
  if (f.rpcs.length === 0) {
    return f.pricedNetworks.length > 0
      ? [
          {
            name: "RPC",
            status: "warn",
            message:
              "no RPC is set (RPC_URL, RPC_URL_BASE, RPC_URL_BASE_SEPOLIA): a settlement whose answer is lost cannot be confirmed on chain (set RPC_URL to an RPC of the priced network)",
          },
        ]
      : [];
  }
  const results = f.rpcs.map((r) => rpcCheck(f, r, local));
  // A remote facilitator settles without the gateway's RPC: a network without one only loses the
  // confirmation of lost answers. The built-in one settles through RPC_URL: its check above says so.
  if (!local) {
    for (const network of f.pricedNetworks.filter(known)) {
      if (f.served[network]) continue;
      const own = rpcVariableOf(network);
      results.push({
        name: `RPC ${network}`,
        status: "warn",
        message: `no RPC answers chain ${NETWORKS[network].chainId} (${network}): a settlement whose answer is lost cannot be confirmed on chain; set ${own} to an RPC of ${network}`,
      });
    }
  }
  return results;
}

function rpcCheck(f: ShopFacts, r: ShopFacts["rpcs"][number], local: boolean): CheckResult {
  // The built-in facilitator settles through RPC_URL: there a wrong or silent chain is a failure.
  const settles = local && r.variable === "RPC_URL";
  const name = r.variable === "RPC_URL" ? "RPC" : `RPC ${r.network}`;
  if ("error" in r.chainId)
    return {
      name,
      status: settles ? "fail" : "warn",
      message: `${rpcName(r)} did not answer eth_chainId: ${r.chainId.error}${settles ? "; the built-in facilitator cannot settle" : ""}`,
    };
  const chainId = r.chainId.value;
  const onChain = networkByChainId(chainId);
  if (r.network !== undefined && onChain !== r.network)
    return {
      name,
      status: "warn",
      message: `${rpcName(r)} is ${chainText(chainId)}, but ${r.network} is chain ${NETWORKS[r.network].chainId}; point ${r.variable} at ${r.network}`,
    };
  if (settles) {
    // Every priced network is settled through this one RPC.
    const other = f.pricedNetworks.filter((n) => n !== onChain);
    if (other.length > 0)
      return {
        name,
        status: "fail",
        message: `${rpcName(r)} is ${chainText(chainId)}, but ${other.map((n) => `${n} is chain ${known(n) ? NETWORKS[n].chainId : "?"}`).join(" and ")}; the built-in facilitator settles through RPC_URL: point it at that chain`,
      };
    if (onChain === undefined || !f.settings.facilitatorNetworks.some((n) => n === onChain))
      return {
        name,
        status: "fail",
        message: `${rpcName(r)} is ${chainText(chainId)}, but FACILITATOR_NETWORKS is ${f.settings.facilitatorNetworks.join(",")}`,
      };
  }
  const serves = Object.entries(f.served)
    .filter(([, s]) => s?.variable === r.variable)
    .map(([n]) => n);
  return {
    name,
    status: "ok",
    message: `${rpcName(r)} is chain ${chainId} (${onChain ?? "unknown"})${serves.length > 0 ? `, reads ${serves.join(", ")}` : ""}`,
  };
}

function relayerChecks(f: ShopFacts): CheckResult[] {
  if (!f.relayer?.wei) return [];
  const name = "relayer gas";
  if ("error" in f.relayer.wei) return []; // the RPC check already says the chain did not answer
  const wei = f.relayer.wei.value;
  const eth = `${formatEth(wei)} ETH`;
  if (wei === 0n)
    return [
      {
        name,
        status: "fail",
        message: `relayer ${f.relayer.address} has no ETH to pay gas: every settlement would fail; send ETH to it on the RPC's chain`,
      },
    ];
  if (wei < LOW_GAS_WEI)
    return [{ name, status: "warn", message: `relayer ${f.relayer.address} has ${eth}, little for gas; top it up` }];
  return [{ name, status: "ok", message: `relayer ${f.relayer.address} has ${eth}` }];
}

function usdcChecks(f: ShopFacts): CheckResult[] {
  return f.usdc.map((u): CheckResult => {
    const name = `USDC ${u.network}`;
    const variable = u.network === "base" ? "USDC_ADDRESS_BASE" : "USDC_ADDRESS_BASE_SEPOLIA";
    if (u.hasCode && "value" in u.hasCode && !u.hasCode.value)
      return {
        name,
        status: "fail",
        message: `no contract at ${u.address} on the RPC's chain${u.overridden ? ` (${variable})` : ""}: buyers' payments cannot settle`,
      };
    if (u.network === "base" && u.overridden)
      return {
        name,
        status: "warn",
        message: `${variable}=${u.address} replaces Circle's USDC on mainnet: buyers pay in that token, not USDC`,
      };
    const checked =
      u.hasCode && "value" in u.hasCode ? ", a contract on chain" : " (not checked: no RPC on this chain)";
    return { name, status: "ok", message: `${u.address}${u.overridden ? ` (${variable})` : " (Circle's)"}${checked}` };
  });
}

function diskChecks(f: ShopFacts): CheckResult[] {
  if (!f.freeBytes) return [];
  const name = "free disk";
  if ("error" in f.freeBytes) return [{ name, status: "warn", message: `could not measure: ${f.freeBytes.error}` }];
  const free = f.freeBytes.value;
  const text = `${Math.floor(free / MIB)} MiB free for the database`;
  if (free < MIN_FREE_BYTES)
    return [{ name, status: "fail", message: `${text}: a full disk stops the ledger recording sales` }];
  if (free < LOW_FREE_BYTES) return [{ name, status: "warn", message: `${text}; the ledger grows with every sale` }];
  return [{ name, status: "ok", message: text }];
}

function fileChecks(f: ShopFacts): CheckResult[] {
  return f.files.map((file): CheckResult => {
    const name = `file mode ${file.label}`;
    const mode = (file.mode & 0o777).toString(8).padStart(3, "0");
    if (file.kind === "directory" && file.mode & 0o002)
      return { name, status: "fail", message: `${mode}: anyone may write here; chmod o-w` };
    if (file.kind === "secret" && file.mode & 0o077)
      return { name, status: "fail", message: `${mode}: others may read this secret; chmod 600` };
    if (file.kind === "env" && file.mode & 0o077)
      return { name, status: "warn", message: `${mode}: others may read it, and it may hold keys; chmod 600` };
    // Readable is fine (payers and amounts are public on chain anyway); writable is a forged ledger.
    if (file.kind === "database" && file.mode & 0o002)
      return { name, status: "fail", message: `${mode}: anyone may rewrite the ledger; chmod o-w` };
    return { name, status: "ok", message: mode };
  });
}

function integrityChecks(f: ShopFacts): CheckResult[] {
  if (!f.integrity) return [];
  // On PostgreSQL the SQLite file checked is this replica's content index (the server keeps its own).
  const name = selectsPostgres(f.settings.db) ? "content index integrity" : "database integrity";
  if ("error" in f.integrity) return [{ name, status: "fail", message: f.integrity.error }];
  return f.integrity.value === "ok"
    ? [{ name, status: "ok", message: "ok" }]
    : [{ name, status: "fail", message: `${f.integrity.value}; restore a backup` }];
}

/** The engine, and for PostgreSQL whether it answers and is migrated as far as this version. */
function databaseChecks(f: ShopFacts): CheckResult[] {
  const { db } = f.settings;
  const name = "database";
  if (!selectsPostgres(db)) return [{ name, status: "ok", message: `SQLite ${db}` }];
  const url = `PostgreSQL ${displayUrl(db)}`;
  if (!f.postgres) return [{ name, status: "ok", message: url }];
  if ("error" in f.postgres) return [{ name, status: "fail", message: `${url} does not answer: ${f.postgres.error}` }];
  const { applied, known } = f.postgres.value;
  if (applied > known)
    return [
      {
        name,
        status: "warn",
        message: `${url} has ${applied} migrations, this version knows ${known}: a newer cidgate migrated it; run one version on every replica`,
      },
    ];
  if (applied < known)
    return [
      {
        name,
        status: "ok",
        message: `${url} answers; ${known - applied} of ${known} migrations to apply (start-up applies them)`,
      },
    ];
  return [{ name, status: "ok", message: `${url} answers, migrated (${applied} migrations)` }];
}

/** With PostgreSQL every replica signs and verifies tokens: one secret, set, never generated per replica. */
function jwtSecretChecks(f: ShopFacts): CheckResult[] {
  if (!selectsPostgres(f.settings.db)) return [];
  const missing = sharedSecretMissing(f.settings);
  if (missing) return [{ name: "JWT secret", status: "fail", message: missing }];
  return [{ name: "JWT secret", status: "ok", message: "JWT_SECRET is set (it must be the same on every replica)" }];
}

/** Every check, in the order `doctor` prints them. */
export function decide(f: ShopFacts): CheckResult[] {
  return [
    ...publicUrlChecks(f),
    ...facilitatorChecks(f),
    ...rpcChecks(f),
    ...relayerChecks(f),
    ...usdcChecks(f),
    ...diskChecks(f),
    ...fileChecks(f),
    ...integrityChecks(f),
    ...databaseChecks(f),
    ...jwtSecretChecks(f),
  ];
}

export function failures(results: readonly CheckResult[]): CheckResult[] {
  return results.filter((r) => r.status === "fail");
}

function formatEth(wei: bigint): string {
  const whole = wei / 10n ** 18n;
  const fraction = (wei % 10n ** 18n).toString().padStart(18, "0").slice(0, 6).replace(/0+$/, "");
  return fraction ? `${whole}.${fraction}` : `${whole}`;
}
