/**
 * The ledger's window on the chain, per network: RPC_URL_BASE /
 * RPC_URL_BASE_SEPOLIA, else RPC_URL for the network its chain id is.
 * Read only. Two questions:
 *
 * - `lookup(row)`: what became of a row's authorization (authorizationState,
 *   then its AuthorizationUsed event and receipt): for unconfirmed
 *   settlements, the background reconciliation and operators.
 * - `confirm(row, tx)`: does the transaction a remote facilitator named
 *   settle this row? One receipt read: the paid path's only extra RPC call.
 *
 * Both answer undefined for a row on a network without an RPC.
 */
import { type AuthorizationFinding, createAuthorizationLookup, type SettlementCheck } from "../chain/authorization";
import { NETWORKS, type NetworkName } from "../chain/networks";
import type { Settings } from "../settings";
import type { Payment } from "./store";

type ChainSettings = Pick<Settings, "rpcUrl" | "facilitatorTimeoutMs"> &
  Partial<Pick<Settings, "rpcUrlBase" | "rpcUrlBaseSepolia">>;

export interface ChainReaders {
  lookup: (row: Payment) => Promise<AuthorizationFinding | undefined>;
  confirm: (row: Payment, txHash: string) => Promise<SettlementCheck | undefined>;
}

/** Whether any RPC is configured for the gateway: without one, settlements are taken on the facilitator's word. */
export function hasRpc(settings: Partial<ChainSettings>): boolean {
  return Boolean(settings.rpcUrl || settings.rpcUrlBase || settings.rpcUrlBaseSepolia);
}

export function chainReaders(settings: ChainSettings): ChainReaders | undefined {
  if (!hasRpc(settings)) return undefined;
  const rpcTimeoutMs = Math.min(10_000, settings.facilitatorTimeoutMs);
  const byUrl = new Map<string, ReturnType<typeof createAuthorizationLookup>>();
  const client = (url: string) => {
    let c = byUrl.get(url);
    if (!c) byUrl.set(url, (c = createAuthorizationLookup({ rpcUrl: url, rpcTimeoutMs })));
    return c;
  };
  const specific: Partial<Record<NetworkName, string>> = {
    base: settings.rpcUrlBase,
    "base-sepolia": settings.rpcUrlBaseSepolia,
  };
  /** The reader for the row's network, once its chain id is checked (asked once per RPC). */
  async function readerFor(row: Payment) {
    const name = row.network as NetworkName;
    const network = Object.hasOwn(NETWORKS, name) ? NETWORKS[name] : undefined;
    if (!network) return undefined;
    for (const url of [specific[name], settings.rpcUrl]) {
      if (!url) continue;
      const c = client(url);
      if ((await c.chainId()) === network.chainId) return c;
    }
    return undefined;
  }
  const query = (row: Payment) => ({
    asset: row.asset as `0x${string}`,
    authorizer: row.payer as `0x${string}`,
    nonce: row.nonce as `0x${string}`,
    payTo: row.payTo as `0x${string}`,
    minValue: BigInt(row.amount),
  });
  return {
    async lookup(row) {
      const c = await readerFor(row);
      return c?.find({ ...query(row), since: Math.floor(Date.parse(row.createdAt) / 1000) });
    },
    async confirm(row, txHash) {
      const c = await readerFor(row);
      return c?.confirm(query(row), txHash as `0x${string}`);
    },
  };
}

/** The lookup alone (the settler's, for callers that predate `chainReaders`). */
export function paymentLookup(settings: ChainSettings): ChainReaders["lookup"] | undefined {
  return chainReaders(settings)?.lookup;
}
