/**
 * Facilitator and RPC health for the dashboard: each asked at most every
 * 15 seconds, each bounded by 3 seconds, never on a buyer's path. The answer
 * names no URL (an RPC URL may carry an API key).
 */
import { canonicalNetwork, networkByChainId } from "../chain/networks";
import { configuredRpcs, type RpcSettings } from "../chain/rpc-choice";
import type { Facilitator } from "../facilitator/types";
import type { Settings } from "../settings";

const TTL_MS = 15_000;
const BOUND_MS = 3_000;

export interface Check {
  state: "ok" | "down" | "not_configured";
  detail: string;
  ms?: number;
  checked_at: string;
}

const firstLine = (e: unknown) =>
  (e instanceof Error ? e.message : String(e))
    .split("\n")[0]
    .replace(/\b\w+:\/\/\S+/g, "<url>")
    .slice(0, 200);

async function timed(what: () => Promise<string>): Promise<Check> {
  const t0 = performance.now();
  const checked_at = new Date().toISOString();
  try {
    const detail = await Promise.race([
      what(),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`no answer within ${BOUND_MS} ms`)), BOUND_MS),
      ),
    ]);
    return { state: "ok", detail, ms: Math.round(performance.now() - t0), checked_at };
  } catch (e) {
    return { state: "down", detail: firstLine(e), ms: Math.round(performance.now() - t0), checked_at };
  }
}

async function rpc(url: string, method: string): Promise<string> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: [] }),
    signal: AbortSignal.timeout(BOUND_MS),
  });
  if (!res.ok) throw new Error(`RPC answered HTTP ${res.status}`);
  const body = (await res.json()) as { result?: string; error?: { message?: string } };
  if (typeof body.result !== "string") throw new Error(`RPC error: ${body.error?.message ?? "no result"}`);
  return body.result;
}

export function createHealth(deps: {
  facilitator: Facilitator;
  settings: Pick<Settings, "facilitatorUrl"> & RpcSettings;
}) {
  let cached: { at: number; value: Promise<{ facilitator: Check; rpc: Check }> } | undefined;

  const check = async () => {
    const facilitator = timed(async () => {
      const s = await deps.facilitator.supported();
      // v1 and v2 kinds name one network twice ("base-sepolia", "eip155:84532"): one name each.
      const kinds = s.kinds?.map((k) => canonicalNetwork(String(k.network)) ?? String(k.network)) ?? [];
      return `${deps.settings.facilitatorUrl === "local" ? "built-in" : "remote"}; networks: ${[...new Set(kinds)].join(", ") || "none"}`;
    });
    // Every RPC the gateway reads (src/chain/rpc-choice.ts), named by its variable; down when one is
    // down or a network's own RPC is on another chain (the ledger would not read that network through it).
    const rpcs = configuredRpcs(deps.settings);
    const chain: Promise<Check> =
      rpcs.length > 0
        ? timed(async () => {
            const lines = await Promise.all(
              rpcs.map(async (r) => {
                const [chainId, block] = await Promise.all([rpc(r.url, "eth_chainId"), rpc(r.url, "eth_blockNumber")]);
                const network = networkByChainId(Number(chainId));
                if (r.network !== undefined && network !== r.network)
                  throw new Error(`${r.variable} is chain ${Number(chainId)}, not ${r.network}`);
                return `${network ?? `chain ${Number(chainId)}`}, block ${Number(block)}`;
              }),
            );
            return rpcs.length === 1 ? lines[0] : lines.map((l, i) => `${rpcs[i].variable}: ${l}`).join("; ");
          })
        : Promise.resolve({
            state: "not_configured",
            detail:
              "no RPC_URL (nor RPC_URL_BASE, RPC_URL_BASE_SEPOLIA): settlements are taken on the facilitator's word",
            checked_at: new Date().toISOString(),
          });
    return { facilitator: await facilitator, rpc: await chain };
  };

  return {
    read() {
      if (!cached || Date.now() - cached.at > TTL_MS) cached = { at: Date.now(), value: check() };
      return cached.value;
    },
  };
}
