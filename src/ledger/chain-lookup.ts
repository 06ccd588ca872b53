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
import { configuredRpcs, servingRpc } from "../chain/rpc-choice";
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
  return configuredRpcs(settings).length > 0;
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
  /** The reader for the row's network, once its chain id is checked (asked once per RPC). */
  async function readerFor(row: Payment) {
    const name = row.network as NetworkName;
    if (!Object.hasOwn(NETWORKS, name)) return undefined;
    const rpc = await servingRpc(settings, name, (url) => client(url).chainId());
    return rpc && client(rpc.url);
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
