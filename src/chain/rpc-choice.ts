/**
 * Which RPC serves a network, the one rule the ledger's chain reads
 * (src/ledger/chain-lookup.ts), `doctor`, start-up's checks, its summary and
 * the dashboard's health all follow: the network's own variable
 * (RPC_URL_BASE, RPC_URL_BASE_SEPOLIA), else RPC_URL, whichever first answers
 * the network's chain id. A shop selling on base and base-sepolia needs two.
 */
import type { Settings } from "../settings";
import { NETWORKS, type NetworkName } from "./networks";

export type RpcVariable = "RPC_URL" | "RPC_URL_BASE" | "RPC_URL_BASE_SEPOLIA";

export interface RpcSetting {
  variable: RpcVariable;
  url: string;
  /** The network this variable is for; undefined for RPC_URL (any chain). */
  network?: NetworkName;
}

export type RpcSettings = Pick<Settings, "rpcUrl"> & Partial<Pick<Settings, "rpcUrlBase" | "rpcUrlBaseSepolia">>;

/** Every RPC variable that is set, network-specific ones first. */
export function configuredRpcs(settings: Partial<RpcSettings>): RpcSetting[] {
  const all: (RpcSetting | undefined)[] = [
    settings.rpcUrlBase ? { variable: "RPC_URL_BASE", url: settings.rpcUrlBase, network: "base" } : undefined,
    settings.rpcUrlBaseSepolia
      ? { variable: "RPC_URL_BASE_SEPOLIA", url: settings.rpcUrlBaseSepolia, network: "base-sepolia" }
      : undefined,
    settings.rpcUrl ? { variable: "RPC_URL", url: settings.rpcUrl } : undefined,
  ];
  return all.filter((r): r is RpcSetting => r !== undefined);
}

/** The RPCs that may serve `network`, in the order they are tried. */
export function rpcCandidates(settings: Partial<RpcSettings>, network: NetworkName): RpcSetting[] {
  return configuredRpcs(settings).filter((r) => r.network === undefined || r.network === network);
}

/** The variable a network's own RPC is set in. */
export function rpcVariableOf(network: NetworkName): RpcVariable {
  return network === "base" ? "RPC_URL_BASE" : "RPC_URL_BASE_SEPOLIA";
}

/**
 * The RPC that serves `network`: the first candidate whose chain id is the
 * network's. `chainIdOf` asks (the ledger: cached per URL, a throw goes to the
 * caller) or looks up what was asked (doctor: undefined when it did not answer).
 */
export async function servingRpc(
  settings: Partial<RpcSettings>,
  network: NetworkName,
  chainIdOf: (url: string) => Promise<number | undefined> | number | undefined,
): Promise<RpcSetting | undefined> {
  for (const rpc of rpcCandidates(settings, network)) {
    if ((await chainIdOf(rpc.url)) === NETWORKS[network].chainId) return rpc;
  }
  return undefined;
}
